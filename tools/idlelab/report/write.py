"""Writes a results folder's reports from its raw records: runs.csv (one RunRow per boot),
one markdown file per matrix (repeats combined by median) and the seeds' PNG plots.

A pure function of the records and the invocation's meta data, so the tests feed it canned
records and `tools/bench --report DIR` rebuilds a folder's reports without booting.
"""
import csv
import os
import sys
from dataclasses import replace

from idlelab import resultsfolder
from idlelab.derive import runrow as derive
from idlelab.report import plots, tables
from idlelab.derive.runrow import COLUMNS, aggregate, by_matrix, csv_cells

CSV_NAME = "runs.csv"


def write_csv(rows, path):
    """runs.csv: one row per boot, COLUMNS in order, None as an empty cell; written under a
    temporary name and renamed, so a reader never sees half of it."""
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow(csv_cells(r))
    os.replace(tmp, path)


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


def completeness(meta, made, planned):
    """The line a table of a folder cut short carries (None for a complete one): how many
    runs of its matrix it holds of how many, and why the rest are missing."""
    status = resultsfolder.status(meta)
    if status == resultsfolder.COMPLETE:
        return None
    of = f"{made} of {planned}" if planned is not None else f"{made} of an unknown number of"
    total = (f"; {meta['runs_made']} of {meta['runs_planned']} runs in all"
             if meta.get("runs_planned") is not None and meta.get("runs_made") is not None
             else "")
    if status == resultsfolder.INTERRUPTED:
        why = (f"interrupted by {meta['signal']}" if meta.get("signal")
               else f"stopped by an error ({meta.get('error', 'not recorded')})")
        why += f" {meta['where']}" if meta.get("where") else ""
    elif status == resultsfolder.INCOMPLETE:
        why = "its bench ended without finishing (killed?)"
    else:
        why = f"its bench is still running (status {status})"
    return f"**Incomplete: {of} runs of this matrix made** ({why}{total})."


def write_all(outdir, recs, meta, predicted=None, hardware=None):
    """runs.csv, one markdown per matrix and the plots; returns the paths written (and a
    note in their place when the plots had to be skipped). `predicted`, {run_key:
    {predicted_* column: value}} (predict.py), fills the predicted columns, and the tables
    show a run that could not be run here by its simulated figures, labelled so.
    `hardware`, [RunRow] (sim/hardware.py), is the same matrices predicted with hardware
    costs, which the seed tables show beside the measured ones."""
    rows = [derive.summarize(r) for r in recs]
    if predicted:
        rows = [replace(row, **predicted.get(run_key(rec), {}))
                for row, rec in zip(rows, recs)]
    written = [os.path.join(outdir, CSV_NAME)]
    write_csv(rows, written[0])
    matrices = by_matrix(aggregate(rows))
    meta = dict(meta, hardware_rows=hardware or [])
    for mid in meta.get("runs_planned_by_matrix") or {}:
        matrices.setdefault(mid, [])      # planned, none made: its table says so
    wants_plots = any(m in plots.PLOTS for m in matrices)
    plt = plots.pyplot() if wants_plots else None
    for mid, mrows in matrices.items():
        path = os.path.join(outdir, f"{mid}.md")
        made = sum(r["matrix"] == mid for r in recs)
        with open(path, "w") as f:
            f.write(tables.markdown(mid, mrows, dict(meta, completeness=completeness(
                meta, made, (meta.get("runs_planned_by_matrix") or {}).get(mid)))))
        written.append(path)
        for name, draw in plots.PLOTS.get(mid, []) if plt and mrows else []:
            draw(mrows, os.path.join(outdir, name), plt)
            written.append(os.path.join(outdir, name))
    if wants_plots and plt is None:
        written.append(plots.SKIPPED.format(python=sys.executable))
    return written
