"""The platform's cost table measured: `bench=exits` booted once (derive/primcosts.py parses it,
resolves a matrix's values from it and lays it out for the tables)."""
from idlelab.derive.primcosts import ITERS, PRIMS, SMP, CostTableError, parse
from idlelab.host import qemu


def measure(accel, iters=ITERS, timeout=120):
    """Boots bench=exits once; returns {"accel", "iters", "seconds", "prims": parse()}.
    Raises CostTableError if the guest did not finish or a primitive is missing."""
    cfg = qemu.Config(smp=SMP, accel=accel, cmdline=f"bench=exits iters={iters}",
                      name="idlelab-costs")
    res = qemu.run(cfg, timeout=timeout)
    if not res.outcome.ok:
        tail = " | ".join(res.output.strip().splitlines()[-2:])
        raise CostTableError(f"bench=exits ended {res.outcome.name}: {tail}")
    prims = parse(res.output)
    missing = [p for p in PRIMS if p not in prims]
    if missing:
        raise CostTableError(f"bench=exits printed no record for {', '.join(missing)}")
    return {"accel": res.accel, "iters": iters, "seconds": round(res.seconds, 2),
            "prims": prims}
