"""Snapshots of KVM's per-vCPU statistics and vCPU thread CPU time, and deltas between them.

A measurement is "what changed between two moments", so the harness takes a Snapshot before
and after a phase and reports delta(a, b): counters subtracted, histograms subtracted bucket
by bucket, instant values (`blocking`, `guest_mode`) taken from the later snapshot. From a
delta come the figures the experiments compare (docs/haltpoll-spec.md §7): the host's poll
success ratio, the CPU it burnt polling, halt exits per second, each vCPU thread's CPU share
and figures per workload event. Nothing else in the harness derives a KVM figure.

Pure: the snapshots are taken by host/vcputhreads.py (the vCPU threads' CPU time) and
bench/windowprobe.py (KVM's statistics over QMP); this module only subtracts and divides.
"""
from dataclasses import dataclass, field

from idlelab.derive.records import is_number

# Stats whose value is a state, not a running total: a delta keeps the later value.
INSTANT = frozenset({"blocking", "guest_mode"})
# QMP schema types (query-stats-schemas) and how a delta treats them.
_KEEP_LATER = frozenset({"instant", "peak"})


@dataclass
class Snapshot:
    """One moment: monotonic time, {cpu: {stat: value}} and {cpu: thread CPU ns}."""
    time_ns: int
    per_vcpu_stats: dict
    per_thread_cpu_ns: dict = field(default_factory=dict)


@dataclass
class Delta:
    """What changed between two snapshots, per vCPU; elapsed_ns is the wall time between.

    The one place a KVM figure is derived from counters: the report and the console read
    rates, percentages and ratios from here and only round and lay them out."""
    elapsed_ns: int
    per_vcpu_stats: dict
    per_thread_cpu_ns: dict

    def vcpus(self):
        return sorted(set(self.per_vcpu_stats) | set(self.per_thread_cpu_ns))

    def figures(self, cpu):
        """The derived figures for one vCPU (None where a figure has no meaning)."""
        s = self.per_vcpu_stats.get(cpu, {})
        return {
            "halt_exits_per_s": rate(s.get("halt_exits"), self.elapsed_ns),
            "poll_success_ratio": poll_success_ratio(s),
            "poll_ns": poll_ns(s),
            "cpu_percent": self.cpu_percent(cpu),
        }

    def totals(self):
        """Counters summed over every vCPU (KVM has no VM-level halt statistic)."""
        out = {}
        for stats in self.per_vcpu_stats.values():
            for name, value in stats.items():
                if name not in INSTANT and not isinstance(value, list):
                    out[name] = out.get(name, 0) + value
        return out

    def total(self, name):
        """One counter summed over every vCPU (0 if no vCPU reported it)."""
        return sum(s.get(name, 0) for s in self.per_vcpu_stats.values())

    def cpu_percent(self, cpu):
        """The vCPU thread's CPU time as % of one host CPU; None without its thread."""
        return cpu_percent(self.per_thread_cpu_ns.get(cpu), self.elapsed_ns)

    def poll_percent(self, cpu):
        """The vCPU's host polling time (success + fail) as % of one host CPU."""
        return cpu_percent(poll_ns(self.per_vcpu_stats.get(cpu, {})), self.elapsed_ns)

    def halt_exits_per_s(self, cpu):
        return rate(self.per_vcpu_stats.get(cpu, {}).get("halt_exits"), self.elapsed_ns)

    def poll_success_percent(self):
        """Successful host polls as % of attempted, over every vCPU; None without polls."""
        ratio = poll_success_ratio({"halt_attempted_poll": self.total("halt_attempted_poll"),
                                    "halt_successful_poll": self.total("halt_successful_poll")})
        return None if ratio is None else 100 * ratio

    def to_json(self):
        """The delta as JSON-ready data (the raw record's host.delta)."""
        return {"elapsed_ns": self.elapsed_ns, "stats": self.per_vcpu_stats,
                "thread_cpu_ns": self.per_thread_cpu_ns}

    @classmethod
    def from_json(cls, data):
        """Back from to_json() after a JSON round trip, which made the vCPU keys strings."""
        return cls(data["elapsed_ns"], {int(k): v for k, v in (data["stats"] or {}).items()},
                   {int(k): v for k, v in (data["thread_cpu_ns"] or {}).items()})


def delta(a, b, schemas=None):
    """b − a per vCPU. `schemas` (query_stats_schemas()["vcpu"]) decides which stats are
    instant or peak; without it the INSTANT names are. A counter that went down means the
    snapshots come from different VMs: that raises, rather than reporting nonsense."""
    if b.time_ns < a.time_ns:
        raise ValueError("snapshots out of order: b was taken before a")
    stats = {}
    for cpu in sorted(set(a.per_vcpu_stats) & set(b.per_vcpu_stats)):
        old, new = a.per_vcpu_stats[cpu], b.per_vcpu_stats[cpu]
        stats[cpu] = {name: _stat_delta(name, old.get(name), new[name], schemas, cpu)
                      for name in new}
    cpu_ns = {}
    for cpu in sorted(set(a.per_thread_cpu_ns) & set(b.per_thread_cpu_ns)):
        cpu_ns[cpu] = _counter_delta(f"vCPU {cpu} thread CPU time",
                                     a.per_thread_cpu_ns[cpu], b.per_thread_cpu_ns[cpu])
    return Delta(b.time_ns - a.time_ns, stats, cpu_ns)


def _stat_delta(name, old, new, schemas, cpu):
    if _is_instant(name, schemas):
        return new
    if old is None:
        raise ValueError(f"vCPU {cpu}: stat {name!r} is missing from the earlier snapshot")
    if isinstance(new, list):
        if len(old) != len(new):
            raise ValueError(f"vCPU {cpu}: histogram {name!r} changed size "
                             f"({len(old)} -> {len(new)} buckets)")
        return [_counter_delta(f"vCPU {cpu} {name}[{i}]", o, n)
                for i, (o, n) in enumerate(zip(old, new))]
    return _counter_delta(f"vCPU {cpu} {name}", old, new)


def _is_instant(name, schemas):
    if schemas and name in schemas:
        return schemas[name].get("type") in _KEEP_LATER
    return name in INSTANT


def _counter_delta(what, old, new):
    if new < old:
        raise ValueError(f"{what} went backwards ({old} -> {new}): not the same VM?")
    return new - old


def poll_success_ratio(stats):
    """halt_successful_poll / halt_attempted_poll; None when no poll was attempted."""
    attempted = stats.get("halt_attempted_poll")
    if not attempted:
        return None
    return stats.get("halt_successful_poll", 0) / attempted


def poll_ns(stats):
    """Host CPU time spent polling (success + fail); None if KVM reported neither."""
    if "halt_poll_success_ns" not in stats and "halt_poll_fail_ns" not in stats:
        return None
    return stats.get("halt_poll_success_ns", 0) + stats.get("halt_poll_fail_ns", 0)


def rate(count, elapsed_ns):
    """Events per second; None without a count or an interval."""
    if count is None or elapsed_ns <= 0:
        return None
    return count * 1e9 / elapsed_ns


def cpu_percent(cpu_ns, elapsed_ns):
    """A thread's CPU time as a percentage of wall time (100 = one host CPU busy)."""
    if cpu_ns is None or elapsed_ns <= 0:
        return None
    return 100.0 * cpu_ns / elapsed_ns


def per_event(count, events):
    """A counter per workload event (halt exits per round trip): None without both, or when
    either is a marker such as "n/a (TCG)" rather than a number."""
    if not is_number(count) or not is_number(events) or not events:
        return None
    return count / events


def mpstat_split(cpu_pct, poll_pct):
    """A vCPU thread's host CPU % split the way mpstat shows it: (polling, guest + exits,
    idle), all % of one host CPU. Polling is KVM's halt_poll_*_ns, counted in the thread."""
    poll = poll_pct or 0.0
    return poll, cpu_pct - poll, 100 - cpu_pct
