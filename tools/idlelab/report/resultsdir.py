"""A bench's results folder: made, kept consistent, read back, and the reports written into it.

A results folder on disk: results/<timestamp>/ (never reused) with raw/NNN-*.json (one
record per boot, written as soon as it ends), runs.csv (a row appended as each run ends),
meta.json, tmp/ (the boots' temporary files, removed at the end) and results/latest pointing
at the newest folder from the moment it is made. Files and the link are written under a
temporary name and renamed into place, so a reader (or a killed bench) never sees half a file.

meta.json's "status" says how far the bench got: "running" from the first moment (with the
owner's pid, the runs planned and the runs made so far), then "complete" (every run made,
reports written) or "interrupted" (a signal or an error: with it, where the bench was, and
the reports written from the runs made). A "running" folder whose owner is gone was killed
(SIGKILL, power loss): the next bench and --report call it "incomplete" and mark it so, and
every table written from it says how many runs of how many it holds.

The reports (write_all): runs.csv (one RunRow per boot), one markdown file per matrix
(repeats combined by median) and the seeds' PNG plots. A function of the records and the
invocation's meta data only, so the tests feed it canned records and `tools/bench --report
DIR` rebuilds a folder's reports without booting. What the bench says on the terminal is
report/console.py's."""
import contextlib
import csv
import hashlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import replace

from idlelab.derive import runrow as derive, windows
from idlelab.derive.runrow import COLUMNS, aggregate, by_matrix, csv_cells
from idlelab.processes import pid_alive, start_ticks
from idlelab.report import plots, tables


RAW = "raw"
META = "meta.json"
LATEST = "latest"
TMP = "tmp"
STATUS = "status"
RUNNING, COMPLETE, INTERRUPTED, INCOMPLETE = "running", "complete", "interrupted", "incomplete"
FINISHED = (COMPLETE, INTERRUPTED)
_STAMP = re.compile(r"\d{8}-\d{6}(-\d+)?")
# The longest raw file name, in bytes: a file name is at most 255 on Linux's filesystems,
# with room for the ".tmp" write_json() adds while it writes.
RAW_NAME_MAX = 200


class FolderError(ValueError):
    """A folder that is not a readable results folder; the message names it."""


def new_results_dir(parent):
    """results/<timestamp>/ with its raw/ (a second invocation in the same second gets a
    suffix). Raises FolderError naming `parent` if it cannot be made there."""
    try:
        os.makedirs(parent, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise FolderError(f"{parent}: not a folder ({_file_in_the_way(parent)} is a "
                          "file)") from None
    except OSError as e:
        raise FolderError(f"{parent}: cannot make it: {e.strerror}") from None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(100):
        path = os.path.join(parent, stamp if i == 0 else f"{stamp}-{i}")
        try:
            os.mkdir(path)
            os.mkdir(os.path.join(path, RAW))
            return path
        except FileExistsError:
            continue
        except OSError as e:
            raise FolderError(f"{parent}: cannot make a results folder in it: "
                              f"{e.strerror}") from None
    raise FolderError(f"{parent}: cannot make a new results folder (100 exist for {stamp})")


def check_parent(parent):
    """Raises FolderError unless results folders can be made under parent; makes nothing,
    so a bad --results-dir is refused before anything runs."""
    path = os.path.abspath(parent)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    if not os.path.isdir(path):
        raise FolderError(f"{parent}: not a folder ({_file_in_the_way(parent)} is a file)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise FolderError(f"{parent}: cannot make folders in {path} (permission denied)")


def _file_in_the_way(path):
    """The first part of path that exists and is not a folder."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        sub = os.sep.join(parts[:i])
        if os.path.exists(sub) and not os.path.isdir(sub):
            return os.path.relpath(sub) if not os.path.isabs(path) else sub
    return path


def point_latest(outdir):
    """results/latest -> outdir, replaced atomically, as soon as the folder exists: `latest`
    is the folder being written or the last one written (its status tells which)."""
    parent, name = os.path.split(os.path.abspath(outdir))
    tmp = os.path.join(parent, f".{LATEST}-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    os.symlink(name, tmp)
    os.replace(tmp, os.path.join(parent, LATEST))


def raw_path(outdir, index, rec):
    """raw/NNN-<matrix>-<run>[-rK].json: one file per boot. A sweep's expanded run name can
    be longer than a file name may be: past RAW_NAME_MAX the name is cut and ends in a hash
    of the whole, so names alike up to the cut still differ. The record inside holds the
    name in full (read_raw reads that), and NNN- still starts the file (resume_state)."""
    safe = re.sub(r"[^A-Za-z0-9_.=-]", "_", rec["name"])
    rep = f"-r{rec['repeat']}" if rec.get("repeats", 1) > 1 else ""
    stem = os.fsencode(f"{index:03d}-{rec['matrix']}-{safe}{rep}")
    if len(stem) + len(".json") > RAW_NAME_MAX:
        digest = hashlib.sha256(stem).hexdigest()[:12]
        cut = stem[:RAW_NAME_MAX - len(f"-{digest}.json")]
        stem = cut.decode(errors="ignore").encode() + f"-{digest}".encode()
    return os.path.join(outdir, RAW, os.fsdecode(stem) + ".json")


def write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def write_meta(outdir, meta):
    write_json(os.path.join(outdir, META), meta)


# --- who owns a folder ----------------------------------------------------------------------

def owner():
    """This process, as meta.json records it."""
    return {"pid": os.getpid(), "start": start_ticks(os.getpid())}


def owner_alive(own):
    """True if the process `own` (from owner()) still runs."""
    if not isinstance(own, dict) or not isinstance(own.get("pid"), int):
        return False
    start = start_ticks(own["pid"])
    return start is not None and (own.get("start") is None or start == own["start"])


# --- reading a folder -------------------------------------------------------------------------

def check_folder(outdir):
    """Raises FolderError unless outdir is a folder holding raw/."""
    if not os.path.exists(outdir):
        raise FolderError(f"{outdir}: no such folder")
    if not os.path.isdir(outdir):
        raise FolderError(f"{outdir}: not a folder")
    if not os.path.isdir(os.path.join(outdir, RAW)):
        raise FolderError(f"{outdir}: no raw/ in it: not a bench results folder")


def read_raw(outdir):
    """The raw records of a results folder, in run order (for --report). A file that is not
    a raw record is a FolderError naming it: the report is never made silently without it."""
    rawdir = os.path.join(outdir, RAW)
    if not os.path.isdir(rawdir):
        raise FolderError(f"{outdir}: not a results folder (no {RAW}/ in it)")
    out = []
    for name in sorted(os.listdir(rawdir)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(rawdir, name)
        try:
            with open(path, encoding="utf-8") as f:
                rec = json.load(f)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise FolderError(f"{path}: not a raw record ({_json_error(e)}); move it away "
                              "to report the others") from None
        except OSError as e:
            raise FolderError(f"{path}: cannot read it: {e.strerror}") from None
        if not isinstance(rec, dict) or not {"matrix", "name", "status"} <= set(rec):
            raise FolderError(f"{path}: not a raw record (no matrix, name and status); "
                              "move it away to report the others")
        why = _unreadable_by_the_report(rec)
        if why:
            raise FolderError(f"{path}: a raw record the report cannot read ({why}); move it "
                              "away to report the others")
        out.append(rec)
    return out


def _unreadable_by_the_report(rec):
    """Why the report could not summarize this record (a field missing or of the wrong
    kind, as in a hand-edited or foreign file), or None: found here, with the file's name,
    rather than as a traceback halfway through the tables."""
    from idlelab.derive.runrow import summarize  # derive reads records; this module only finds them
    try:
        for w in windows.split(rec):
            summarize(w)
    except KeyError as e:
        return f"no {e.args[0]!r} field"
    except (TypeError, ValueError, AttributeError, IndexError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def _json_error(e):
    if isinstance(e, json.JSONDecodeError):
        return f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
    return "not UTF-8 text"


def read_meta(outdir, name=None):
    """meta.json of a results folder (or `name` there, a file of its shape), {} if it has
    none; FolderError if it is unreadable."""
    path = os.path.join(outdir, name or META)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FolderError(f"{path}: not a meta.json ({_json_error(e)})") from None
    if not isinstance(meta, dict):
        raise FolderError(f"{path}: not a meta.json (not a JSON object)")
    return meta


def tmp_dir(outdir):
    """The folder's tmp/, made if missing: where its boots keep their temporary files."""
    path = os.path.join(outdir, TMP)
    os.makedirs(path, exist_ok=True)
    return path


def remove_tmp(outdir):
    """Removes the folder's tmp/ (at the bench's end, or when a killed folder is found)."""
    shutil.rmtree(os.path.join(outdir, TMP), ignore_errors=True)


def status(meta):
    """The folder's status from its meta.json ("state" before 2026-12-02). A bench from
    before either existed wrote "seconds" only when it finished; a folder with neither was
    cut short."""
    given = meta.get(STATUS, meta.get("state"))
    if given is not None:
        if given == RUNNING and not owner_alive(meta.get("owner")):
            return INCOMPLETE
        return given
    if "seconds" not in meta:
        return INCOMPLETE
    return INTERRUPTED if meta.get("interrupted") else COMPLETE


def count_raw(outdir):
    raw = os.path.join(outdir, RAW)
    return len([f for f in os.listdir(raw) if f.endswith(".json")]) if os.path.isdir(raw) else 0


def missing_raw(meta, found):
    """How many of the runs meta.json says were made have no raw record among the `found`
    read back (deleted or moved away since): 0 if none, or if meta.json does not say."""
    made = meta.get("runs_made")
    return made - found if isinstance(made, int) and found is not None and made > found else 0


def missing_note(outdir, meta, found):
    """One line saying how many raw records are missing from a folder, None if none are."""
    lost = missing_raw(meta, found)
    if not lost:
        return None
    return (f"{outdir}: {lost} of the {meta['runs_made']} raw records its bench wrote "
            f"{'is' if lost == 1 else 'are'} missing from raw/ (deleted or moved away?); "
            f"reporting the {found} there")


def incomplete_note(outdir, meta):
    """One line saying what is missing from a folder cut short."""
    n = count_raw(outdir)
    planned = meta.get("runs_planned")
    of = f" of {planned} planned" if planned is not None else ""
    return (f"{outdir}: incomplete: the bench writing it ended without finishing (killed?) "
            f"after {n} raw record{'s' if n != 1 else ''}{of}")


def mark_incomplete(outdir, meta, how):
    """Records in meta.json that the folder was found cut short, and by what; its runs made
    are what raw/ holds, and its temporary files go."""
    remove_tmp(outdir)
    meta = {k: v for k, v in meta.items() if k != "state"}
    meta.update({STATUS: INCOMPLETE, "runs_made": count_raw(outdir)})
    meta.setdefault("incomplete", {})
    meta["incomplete"] = dict(meta["incomplete"], found=time.strftime("%Y-%m-%d %H:%M:%S"),
                              by=how)
    write_meta(outdir, meta)
    return meta


def find_incomplete(parent):
    """The <timestamp>/ folders under parent that a bench left "running" and is gone from."""
    if not os.path.isdir(parent):
        return []
    out = []
    for name in sorted(os.listdir(parent)):
        path = os.path.join(parent, name)
        if not _STAMP.fullmatch(name) or os.path.islink(path) or not os.path.isdir(path):
            continue
        try:
            meta = read_meta(path)
        except FolderError:
            continue
        if meta.get(STATUS, meta.get("state")) == RUNNING and status(meta) == INCOMPLETE:
            out.append((path, meta))
    return out


def reclaim_latest_tmp(parent):
    """Removes .latest-<pid> links left by a bench killed while it moved `latest`."""
    if not os.path.isdir(parent):
        return
    for name in os.listdir(parent):
        m = re.fullmatch(rf"\.{LATEST}-(\d+)", name)
        if m and not pid_alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(parent, name))


# --- The reports --------------------------------------------------------------------------

CSV_NAME = "runs.csv"


def write_csv(rows, path):
    """runs.csv: one row per boot, COLUMNS in order, None as an empty cell; written under a
    temporary name and renamed, so a reader never sees half of it (nor, when it cannot be
    written, the temporary file)."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS)
            for r in rows:
                w.writerow(csv_cells(r))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def writing(path):
    """An OSError writing `path` (a read-only folder, a folder where the file goes, a full
    disk) as a FolderError naming it: one line for the user, not a traceback."""
    try:
        yield
    except OSError as e:
        raise FolderError(f"{path}: cannot write it: {e.strerror or e}") from None


def append_csv(row, path):
    """One more row at the end of runs.csv, as a run ends (the header is already there):
    flushed to the disk before the bench goes on, so a bench killed later keeps it."""
    with open(path, "a", newline="") as f:
        csv.writer(f).writerow(csv_cells(row))
        f.flush()
        os.fsync(f.fileno())


def run_key(rec):
    """One boot of a results folder: (matrix, run name, repeat index)."""
    return rec["matrix"], rec["name"], rec.get("repeat")


def completeness(meta, made, planned, found=None):
    """The line a table of a folder short of runs carries (None for a complete one): how many
    runs of its matrix it holds of how many, and why the rest are missing: its bench cut
    short, or raw records gone from raw/ since it wrote them (`found`, the raw records of
    the whole folder read back, against meta.json's runs_made: missing_raw)."""
    state = status(meta)
    lost = missing_raw(meta, found)
    if state == COMPLETE and (not lost or planned is not None and made >= planned):
        return None
    of = f"{made} of {planned}" if planned is not None else f"{made} of an unknown number of"
    total = (f"; {meta['runs_made']} of {meta['runs_planned']} runs in all"
             if meta.get("runs_planned") is not None and meta.get("runs_made") is not None
             else "")
    if lost:
        total += (f"; {lost} of the {meta['runs_made']} raw records it wrote "
                  f"{'is' if lost == 1 else 'are'} missing from raw/")
    if state == COMPLETE:
        why = "its bench completed"
    elif state == INTERRUPTED:
        why = (f"interrupted by {meta['signal']}" if meta.get("signal")
               else f"stopped by an error ({meta.get('error', 'not recorded')})")
        why += f" {meta['where']}" if meta.get("where") else ""
    elif state == INCOMPLETE:
        why = "its bench ended without finishing (killed?)"
    else:
        why = f"its bench is still running (status {state})"
    return (f"**Incomplete: {of} runs of this matrix {'in raw/' if lost else 'made'}** "
            f"({why}{total}).")


def write_all(outdir, recs, meta, predicted=None, hardware=None, csv_only=False):
    """runs.csv, one markdown per matrix and the plots; returns the paths written (and a
    note in their place when the plots had to be skipped). `predicted`, {run_key:
    {predicted_* column: value}} (predict.py), fills the predicted columns, and the tables
    show a run that could not be run here by its simulated figures, labelled so.
    `hardware`, [RunRow] (sim/simrun.py), is the same matrices predicted with hardware
    costs, which the seed tables show beside the measured ones. A file it cannot write is a
    FolderError naming it. csv_only writes runs.csv alone (--no-report)."""
    recs = [w for r in recs for w in windows.split(r)]   # a row per measured window
    rows = [derive.summarize(r) for r in recs]
    if predicted:
        rows = [replace(row, **predicted.get(run_key(rec), {}))
                for row, rec in zip(rows, recs)]
    written = [os.path.join(outdir, CSV_NAME)]
    with writing(written[0]):
        write_csv(rows, written[0])
    if csv_only:
        return written
    matrices = by_matrix(aggregate(rows))
    meta = dict(meta, hardware_rows=hardware or [])
    for mid in meta.get("runs_planned_by_matrix") or {}:
        matrices.setdefault(mid, [])      # planned, none made: its table says so
    wants_plots = any(m in plots.PLOTS for m in matrices)
    plt = plots.pyplot() if wants_plots else None
    for mid, mrows in matrices.items():
        path = os.path.join(outdir, f"{mid}.md")
        made = sum(r["matrix"] == mid for r in recs)
        with writing(path), open(path, "w") as f:
            f.write(tables.markdown(mid, mrows, dict(meta, completeness=completeness(
                meta, made, (meta.get("runs_planned_by_matrix") or {}).get(mid), len(recs)))))
        written.append(path)
        for name, draw in plots.PLOTS.get(mid, []) if plt and mrows else []:
            with writing(os.path.join(outdir, name)):
                draw(mrows, os.path.join(outdir, name), plt, note=plots.note_of(meta))
            written.append(os.path.join(outdir, name))
    if wants_plots and plt is None:
        written.append(plots.SKIPPED.format(python=sys.executable))
    return written
