"""The harness's knowledge of the `@idlelab cpu` record held to the record's one definition,
kernel/cpu_record.h (read through build/host/cpurecorddoc, built from it): the identities it
checks are on the fields the kernel prints, with the operands the header states, and every
runs.csv column said to sum a cpu field sums that field. A record is made here from the
header's own field list, so a field renamed there, or read under another name here, fails."""
import re
import subprocess
from dataclasses import fields

import pytest

from conftest import TOP
from idlelab.derive import columns, guestrun, runrow

CPURECORDDOC = f"{TOP}/build/host/cpurecorddoc"
WINDOW_NS = 1_000_000_000
# A field's identity as the header's meaning writes it: `a` + `b` [+ `c`] or `a` - `b`.
IDENTITY = re.compile(r"`(\w+)`((?: [+-] `\w+`)+)")


@pytest.fixture(scope="module")
def header():
    """{field: meaning} in the record's order."""
    subprocess.run(["make", "-s", "-C", TOP, "build/host/cpurecorddoc"], check=True,
                   timeout=120)
    table = subprocess.run([CPURECORDDOC], capture_output=True, text=True, check=True).stdout
    rows = re.findall(r"^\| `(\w+)` \| [^|]* \| (.*) \|$", table, re.M)
    names = subprocess.run([CPURECORDDOC, "--names"], capture_output=True, text=True,
                           check=True).stdout.split()
    assert [n for n, _ in rows] == names and len(names) > 20
    return dict(rows)


def identities(header):
    """{total: [(+1 or -1, operand)]} for every field whose meaning states one."""
    out = {}
    for name, meaning in header.items():
        m = IDENTITY.search(meaning)
        if m:
            terms = re.findall(r" ([+-]) `(\w+)`", m.group(2))
            out[name] = [(1, m.group(1))] + [(1 if s == "+" else -1, t) for s, t in terms]
    return out


def consistent_cpu(header, cpu):
    """One CPU's record of every header field, each value its own (no two alike, so a
    figure read from the wrong field shows), the totals made to satisfy the identities."""
    ids = identities(header)
    values = {name: 5000 - 97 * i + cpu for i, name in enumerate(header)}
    values["id"] = cpu
    for _ in ids:                       # totals of totals (idle_entries of poll_entries)
        for total, terms in ids.items():
            values[total] = sum(sign * values[t] for sign, t in terms)
    return values


def serial(cpus, steal_time="kvm"):
    lines = ["@idlelab boot cpus=2 tsc_hz=2596136000 kvm=1",
             f"@idlelab idle policy=haltpoll reason=knob msr=0 steal_time={steal_time}",
             "@idlelab config idle=haltpoll cpus=0",
             "@idlelab window state=open what=pingpong t_ns=1000",
             f"@idlelab window state=close what=pingpong t_ns={1000 + WINDOW_NS}"]
    lines += ["@idlelab cpu " + " ".join(f"{k}={v}" for k, v in c.items()) for c in cpus]
    return "\n".join(lines + ["@idlelab exit code=0x10 name=SUCCESS cpu=0"]) + "\n"


def test_the_header_states_the_identities_the_harness_relies_on(header):
    ids = identities(header)
    assert {"hlt", "poll_entries", "idle_entries"} <= set(ids), ids
    assert all(t in header for terms in ids.values() for _, t in terms), ids


def test_a_record_of_the_kernels_fields_reads_and_adds_up(header):
    cpus = [consistent_cpu(header, c) for c in (0, 1)]
    run = guestrun.parse_run(serial(cpus))
    assert run.cpus == cpus
    assert guestrun.check_invariants(run) == []


@pytest.mark.parametrize("total", ["hlt", "poll_entries", "idle_entries"])
def test_an_identity_broken_in_any_of_its_fields_is_caught(header, total):
    """The identities the guest's counters are kept apart for (kernel/idle.c), each broken by
    one in its total and in every operand the header names: one violation, on that CPU."""
    for name in [total] + [t for _, t in identities(header)[total]]:
        cpus = [consistent_cpu(header, c) for c in (0, 1)]
        cpus[1][name] += 1
        bad = guestrun.check_invariants(guestrun.parse_run(serial(cpus)))
        assert len(bad) >= 1 and all(b.startswith("cpu 1:") for b in bad), (name, bad)


def test_an_idle_time_beyond_the_window_is_caught(header):
    cpus = [consistent_cpu(header, c) for c in (0, 1)]
    cpus[0].update(poll_ns=WINDOW_NS, halt_ns=WINDOW_NS // 2)
    cpus[0]["idle_ns"] = cpus[0]["poll_ns"] + cpus[0]["halt_ns"]
    bad = guestrun.check_invariants(guestrun.parse_run(serial(cpus)))
    assert len(bad) == 1 and bad[0].startswith("cpu 0: idle_ns"), bad


def summed_columns():
    """[(column, cpu field, unit)] of the runs.csv columns whose meaning says they sum a field
    of the guest's records: "... (`field`), summed"."""
    out = []
    for f in fields(columns.RunRow):
        m = re.search(r"\(`(\w+)`\), summed", f.metadata.get("meaning", ""))
        if m and f.metadata.get("source") == columns.GUEST:
            out.append((f.name, m.group(1), f.metadata["unit"]))
    return out


def test_every_column_said_to_sum_a_cpu_field_sums_it(header):
    """summarize() on a record of the header's fields: each such column is its field's sum
    over the CPUs (in its unit), so a column reading a field the kernel does not print, or
    another field, fails."""
    cols = summed_columns()
    assert len(cols) >= 8 and all(field in header for _, field, _ in cols), cols
    cpus = [consistent_cpu(header, c) for c in (0, 1)]
    rec = {"matrix": "m", "name": "r", "config": "r", "repeat": 1, "status": "ok",
           "reason": None, "accel": "kvm", "workload": "pingpong", "smp": 2,
           "halt_poll": {"scope": "vm", "ns": 0}, "guest_knobs": {}, "settings": {},
           "serial": serial(cpus),
           "host": {"open": {"sample_ms": 1.0}, "close": {"sample_ms": 1.0},
                    "delta": {"elapsed_ns": WINDOW_NS, "stats": {}, "thread_cpu_ns": {}}}}
    row = runrow.summarize(rec)
    for col, field, unit in cols:
        want = sum(c[field] for c in cpus) / {"count": 1, "ms": 1e6}[unit]
        assert getattr(row, col) == pytest.approx(want, abs=0.01), (col, field)


def test_the_side_by_side_view_reads_fields_the_kernel_prints(header):
    assert set(runrow.GUEST_SIDE) <= set(header), set(runrow.GUEST_SIDE) - set(header)
