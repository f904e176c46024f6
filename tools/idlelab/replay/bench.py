"""make bench-replay: the engine's speed on synthetic traces (its own --synthesize, under
x86's default parameters), as the issue asks it: halts replayed a second, and a 10 s trace of
64 vCPUs with a 4-value what-if. Numbers, not a pass/fail: this machine is shared."""
import os
import re
import subprocess
import sys
import tempfile
import time

from idlelab.replay.cli import engine

CASES = (("64 vCPUs x 10 s, check + 4-value what-if", "64,10,7",
          ["--halt-poll-ns", "0,50us,200us,400us"]),
         ("2 vCPUs x 60 s, check only", "2,60,3", []))


def main():
    exe = engine()
    with tempfile.TemporaryDirectory(prefix="idlelab-replay-bench-") as d:
        for what, spec, extra in CASES:
            path = os.path.join(d, "t.trace")
            with open(path, "w") as f:
                subprocess.run([exe, "--synthesize", spec], stdout=f, check=True)
            size = os.path.getsize(path)
            best = None
            for _ in range(3):
                t0 = time.monotonic()
                r = subprocess.run([exe, path, "--totals"] + extra, capture_output=True,
                                   text=True, check=True)
                dt = time.monotonic() - t0
                best = dt if best is None else min(best, dt)
            halts = int(re.search(r"(\d+) halts and", r.stdout)[1])
            agree = re.search(r"^\s+all\s+(\d+ of \d+) halts agree", r.stdout, re.M)[1]
            print(f"{what}: {halts} halts ({size / 1e6:.0f} MB of text): best of 3 "
                  f"{dt if best is None else best:.2f} s, {halts / best / 1e6:.2f} M halts/s "
                  f"with the parse; {agree} halts agree", flush=True)
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
