"""One host CPU's time as mpstat shows it: the per-CPU lines of /proc/stat read at the window
markers, and their split over a window into %usr, %sys, %guest, ... by mpstat's own rules.

The seed (003) read `mpstat` of the CPU its vCPU was pinned to: KVM's halt polling is kernel
time of the vCPU thread, so it shows as %sys, the guest's own running as %guest, a sleeping
vCPU as %idle. /proc/stat counts busy time in ticks (the kernel's HZ), idle time exactly, so
a window of 500 ms at HZ=250 has a resolution of 0.8 points, as mpstat over the same span has.
The reading is in host/, the split pure."""

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest",
          "guest_nice")
# mpstat's columns: (name, how it is made from the fields' deltas). user and nice include the
# guest's time in /proc/stat; mpstat takes it out, as here.
COLUMNS = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice", "idle")


def read(cpus, path="/proc/stat"):
    """{cpu: [the ten fields, ticks]} of the host CPUs asked (a CPU the kernel does not list,
    offline say, is left out)."""
    want = {f"cpu{c}": c for c in cpus}
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] in want:
                values = [int(x) for x in parts[1:1 + len(FIELDS)]]
                out[want[parts[0]]] = values + [0] * (len(FIELDS) - len(values))
    return out


def split(a, b):
    """mpstat's split of one CPU between readings a and b ([ticks] in FIELDS order): {column:
    % of the CPU} and `ticks`, the span in ticks; None when no tick passed or a counter went
    back (not the same CPU's readings)."""
    d = dict(zip(FIELDS, (y - x for x, y in zip(a, b))))
    if any(v < 0 for v in d.values()):
        return None
    # the total leaves guest and guest_nice out: user and nice already hold them
    total = sum(d[f] for f in FIELDS[:8])
    if total <= 0:
        return None
    parts = {"usr": d["user"] - d["guest"], "nice": d["nice"] - d["guest_nice"],
             "sys": d["system"], "iowait": d["iowait"], "irq": d["irq"], "soft": d["softirq"],
             "steal": d["steal"], "guest": d["guest"], "gnice": d["guest_nice"],
             "idle": d["idle"]}
    out = {k: round(100.0 * max(parts[k], 0) / total, 2) for k in COLUMNS}
    out["ticks"] = total
    return out
