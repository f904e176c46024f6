"""tools/replay's command line: the engine's own options passed through, and two of its own:
--png FILE (the what-if drawn from the engine's --csv) and --results FOLDER (every traced boot
of an idlelab results folder checked under the parameters each of its windows had)."""
import csv
import os
import re
import subprocess
import sys
import tempfile

from idlelab import TOP
from idlelab.replay import exits, predict, schedule

ENGINE = os.path.join(TOP, "build", "idlelab-replay")
PROG = "replay"
CODES = {name: code for name, (code, _) in exits.load().items()}


def say(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def engine():
    """build/idlelab-replay, made first if it is missing or older than its sources."""
    r = subprocess.run(["make", "-s", "-C", TOP, "build/idlelab-replay"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        say(f"cannot build build/idlelab-replay: {r.stderr.strip().splitlines()[-1:]}")
        sys.exit(CODES["RP_EXIT_USAGE"])
    return ENGINE


def take(argv, flag):
    """(value of `flag VALUE` or None, argv without it); a flag without a value is an error."""
    if flag not in argv:
        return None, argv
    i = argv.index(flag)
    if i + 1 >= len(argv):
        say(f"{flag} needs a value")
        sys.exit(CODES["RP_EXIT_USAGE"])
    return argv[i + 1], argv[:i] + argv[i + 2:]


def draw(csv_path, png_path):
    """Polling CPU and poll success against the window, one line per other setting: KVM's
    window, or with --guest the guest's."""
    from idlelab.report import plots
    plt = plots.pyplot()
    if plt is None:
        say(plots.SKIPPED.format(python=sys.executable).strip("()"))
        return CODES["RP_EXIT_PNG"]
    with open(csv_path) as f:
        rows = [r for r in csv.DictReader(f) if r["vcpu" if "vcpu" in r else "cpu"] == "all"]
    guest = bool(rows) and "guest_halt_poll_ns" in rows[0]
    x_key, hit_key, of_key = (("guest_halt_poll_ns", "poll_hits", "periods") if guest else
                              ("halt_poll_ns", "polls_successful", "halts"))

    def hit(r):
        return 100 * int(r[hit_key]) / max(1, int(r[of_key]))

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    lines = {}
    for r in rows:
        if r["what"] == "what-if":
            key = f"shrink {r['shrink']}, grow {r['grow']} from {int(r['grow_start']) / 1000:g} us"
            lines.setdefault(key, []).append(r)
    for key, rs in lines.items():
        rs.sort(key=lambda r: int(r[x_key]))
        x = [int(r[x_key]) / 1000 for r in rs]
        ax1.plot(x, [float(r["poll_cpu_pct"]) for r in rs], marker="o", label=key)
        ax2.plot(x, [hit(r) for r in rs], marker="o", label=key)
    for r in rows:
        if r["what"] == "recorded":
            x = int(r[x_key]) / 1000
            ax1.plot([x], [float(r["poll_cpu_pct"])], "k*", markersize=12, label="recorded")
            ax2.plot([x], [hit(r)], "k*", markersize=12, label="recorded")
    who = "guest" if guest else "host"
    ax1.set_ylabel(f"{who} CPU polling (% of a CPU, all {'CPUs' if guest else 'vCPUs'})")
    ax2.set_ylabel("idle periods a poll caught (%)" if guest else "halts a poll caught (%)")
    ax2.set_xlabel(f"{x_key} (us)")
    ax1.set_title(f"What-if replay of the trace's {'idle periods' if guest else 'halts'} "
                  "(first order)")
    ax1.legend(fontsize="small")
    try:
        plots.save(fig, png_path, plt)
    except OSError as e:
        say(f"--png {png_path}: {e.strerror or e}")
        return CODES["RP_EXIT_PNG"]
    print(f"replay: {png_path}")
    return 0


AGREE = re.compile(r"^\s+all\s+(\d+) of (\d+) halts agree$", re.M)


def results(folder, passthrough):
    """Each traced boot of `folder`, checked with its own parameter schedule."""
    from idlelab.report import resultsdir
    try:
        recs = resultsdir.read_raw(folder)
    except resultsdir.FolderError as e:
        say(f"--results {e}")
        return CODES["RP_EXIT_USAGE"]
    total = [0, 0, 0, 0]
    worst = 0
    for rec in recs:
        raw = (rec.get("trace") or {}).get("raw") or {}
        name = f"{rec.get('matrix')}/{rec.get('name')} #{rec.get('repeat')}"
        if "path" not in raw:
            continue
        try:
            params, lines = schedule.of_record(rec)
        except schedule.NoSchedule as e:
            print(f"{name}: not checked: {e}")
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".schedule", delete=False) as f:
            f.write("\n".join(lines) + "\n")
        try:
            r = subprocess.run([engine(), os.path.join(folder, "traces", raw["path"]),
                                "--params", params, "--schedule", f.name, "--from-start",
                                "--totals"] + passthrough, capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        m = AGREE.search(r.stdout)
        if r.returncode != 0 or not m:
            print(f"{name}: {r.stderr.strip() or 'no check line'}")
            worst = worst or r.returncode or 1
            continue
        total[0] += int(m[1])
        total[1] += int(m[2])
        mism = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("mismatch")]
        either = sum(int(x) for x in re.findall(r"\((\d+) across a parameter switch\)",
                                                 r.stdout))
        spanning = sum(int(x) for x in re.findall(
            r"\((\d+) begun and ended under different parameters\)", r.stdout))
        total[2] += either
        total[3] += spanning
        print(f"{name}: {m[1]} of {m[2]} halts agree ({len(lines)} switches; {spanning} "
              f"halts began under one setting and ended under the next, {either} ended while "
              f"it was written)")
        for ln in mism:
            print(f"  {ln}")
    if total[1] == 0:
        say(f"{folder}: no record with a kept trace (trace=halt_poll_ns boots keep one)")
        return CODES["RP_EXIT_NO_EVENTS"]
    print(f"all: {total[0]} of {total[1]} halts agree ({total[3]} began under one setting "
          f"and ended under the next, {total[2]} ended while it was written)")
    return worst


def whatif_row(trace, params, sched_path, window, target, extra=()):
    """The engine's 'all' what-if row (polling %, successful polls) of window's halts alone
    under the target parameters."""
    hpn, grow, start, shrink = (dict(kv.split("=") for kv in target.split(","))[k]
                                for k in ("halt_poll_ns", "grow", "grow_start", "shrink"))
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        r = subprocess.run([engine(), trace, "--params", params, "--schedule", sched_path,
                            "--from-start", "--totals", "--range",
                            f"{window['mono_ns'][0]},{window['mono_ns'][1]}",
                            "--halt-poll-ns", hpn, "--grow", grow, "--grow-start", start,
                            "--shrink", shrink, "--csv", f.name] + list(extra),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr.strip())
        with open(f.name) as rows_file:
            rows = {x["what"]: x for x in csv.DictReader(rows_file) if x["vcpu"] == "all"}
    return tuple((float(rows[k]["poll_cpu_pct"]), int(rows[k]["polls_successful"]))
                 for k in ("what-if", "recorded"))


def predictions(folder, extra=()):
    """--predict: every traced boot's windows replayed under its other settings, against the
    windows measured at those settings."""
    from idlelab.report import resultsdir
    try:
        recs = resultsdir.read_raw(folder)
    except resultsdir.FolderError as e:
        say(f"--results {e}")
        return CODES["RP_EXIT_USAGE"]
    cells, own_cells = {}, {}
    for rec in recs:
        raw = (rec.get("trace") or {}).get("raw") or {}
        if "path" not in raw:
            continue
        try:
            params, lines = schedule.of_record(rec)
        except schedule.NoSchedule:
            continue
        trace = os.path.join(folder, "traces", raw["path"])
        with tempfile.NamedTemporaryFile("w", suffix=".schedule") as sf:
            sf.write("\n".join(lines) + "\n")
            sf.flush()
            for a, b, wa, wb, target in predict.pairs_of(rec):
                c = cells.setdefault((f"{rec['matrix']}/{rec['name']}", a, b),
                                     {"pred": [], "meas": []})
                try:
                    got = [whatif_row(trace, params, sf.name, w, target, extra) for w in wa]
                except RuntimeError as e:
                    print(f"{rec['matrix']}/{rec['name']} #{rec['repeat']}: {e}")
                    continue
                c["pred"] += [g[0] for g in got]
                c["meas"] += [predict.measured(w) for w in wb]
                if b == next(x[1] for x in predict.pairs_of(rec) if x[0] == a):
                    own = own_cells.setdefault((f"{rec['matrix']}/{rec['name']}", a),
                                               {"pred": [], "meas": []})
                    own["pred"] += [g[1] for g in got]
                    own["meas"] += [predict.measured(w) for w in wa]
    lines = predict.summarize(cells)
    if lines:
        lines += ["", "each window's own halts as the trace has them, against KVM's counters "
                      "in the same window (a miss counted as its whole window):"]
        lines += predict.summarize({(n, a, "itself"): c for (n, a), c in own_cells.items()})
    if not lines:
        say(f"{folder}: no traced boot with windows of two kvm settings")
        return CODES["RP_EXIT_NO_EVENTS"]
    print("\n".join(lines))
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    folder, argv = take(argv, "--results")
    if folder is not None:
        if "--predict" in argv:
            return predictions(folder, [a for a in argv if a != "--predict"])
        return results(folder, argv)
    png, argv = take(argv, "--png")
    if png is None or "--synthesize" in argv:
        return subprocess.run([engine()] + argv).returncode
    csv_path, argv = take(argv, "--csv")
    tmp = None
    if csv_path is None:
        fd, tmp = tempfile.mkstemp(suffix=".csv")
        os.close(fd)
        csv_path = tmp
    try:
        code = subprocess.run([engine()] + argv + ["--csv", csv_path]).returncode
        return code or draw(csv_path, png)
    finally:
        if tmp:
            os.unlink(tmp)
