"""A results folder on disk: results/<timestamp>/ (never reused) with raw/NNN-*.json (one
record per boot, written as soon as it ends), meta.json, and results/latest pointing at the
newest folder. Files and the link are written under a temporary name and renamed into
place, so a reader (or a killed bench) never sees half a file."""
import contextlib
import json
import os
import re
import time

RAW = "raw"
META = "meta.json"
LATEST = "latest"


def new_results_dir(parent):
    """results/<timestamp>/ (a second invocation in the same second gets a suffix) and
    results/latest pointing at it (replaced atomically)."""
    os.makedirs(parent, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(100):
        name = stamp if i == 0 else f"{stamp}-{i}"
        path = os.path.join(parent, name)
        try:
            os.mkdir(path)
            break
        except FileExistsError:
            continue
    else:
        raise RuntimeError(f"cannot make a new results folder in {parent}")
    tmp = os.path.join(parent, f".{LATEST}-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    os.symlink(name, tmp)
    os.replace(tmp, os.path.join(parent, LATEST))
    return path


def raw_path(outdir, index, rec):
    """raw/NNN-<matrix>-<run>[-rK].json: one file per boot."""
    safe = re.sub(r"[^A-Za-z0-9_.=-]", "_", rec["name"])
    rep = f"-r{rec['repeat']}" if rec.get("repeats", 1) > 1 else ""
    return os.path.join(outdir, RAW, f"{index:03d}-{rec['matrix']}-{safe}{rep}.json")


def write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def write_meta(outdir, meta):
    write_json(os.path.join(outdir, META), meta)


def read_raw(outdir):
    """The raw records of a results folder, in run order (for --report)."""
    rawdir = os.path.join(outdir, RAW)
    out = []
    for name in sorted(os.listdir(rawdir)):
        if name.endswith(".json"):
            with open(os.path.join(rawdir, name)) as f:
                out.append(json.load(f))
    return out


def read_meta(outdir):
    """meta.json of a results folder, {} if it has none."""
    path = os.path.join(outdir, META)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)
