"""Writes a results folder's reports from its raw records: runs.csv (one RunRow per boot),
one markdown file per matrix (repeats combined by median) and the seeds' PNG plots.

A pure function of the records and the invocation's meta data, so the tests feed it canned
records and `tools/bench --report DIR` rebuilds a folder's reports without booting.
"""
import os
import sys
from dataclasses import replace

from . import derive, plots, tables
from .runrow import aggregate, by_matrix, write_csv

CSV_NAME = "runs.csv"


def run_key(rec):
    """One boot of a results folder: (matrix, run name, repeat index)."""
    return rec["matrix"], rec["name"], rec.get("repeat")


def write_all(outdir, recs, meta, predicted=None):
    """runs.csv, one markdown per matrix and the plots; returns the paths written (and a
    note in their place when the plots had to be skipped). `predicted`, {run_key:
    {predicted_* column: value}} (predict.py), fills the predicted columns, and the tables
    show a run that could not be run here by its simulated figures, labelled so."""
    rows = [derive.summarize(r) for r in recs]
    if predicted:
        rows = [replace(row, **predicted.get(run_key(rec), {}))
                for row, rec in zip(rows, recs)]
    written = [os.path.join(outdir, CSV_NAME)]
    write_csv(rows, written[0])
    matrices = by_matrix(aggregate(rows))
    wants_plots = any(m in plots.PLOTS for m in matrices)
    plt = plots.pyplot() if wants_plots else None
    for mid, mrows in matrices.items():
        path = os.path.join(outdir, f"{mid}.md")
        with open(path, "w") as f:
            f.write(tables.markdown(mid, mrows, meta))
        written.append(path)
        for name, draw in plots.PLOTS.get(mid, []) if plt else []:
            draw(mrows, os.path.join(outdir, name), plt)
            written.append(os.path.join(outdir, name))
    if wants_plots and plt is None:
        written.append(plots.SKIPPED.format(python=sys.executable))
    return written
