"""tools/replay: KVM's halt-polling decisions replayed from a host's trace (the engine is
build/idlelab-replay, tools/kvmreplay/), its PNG, and idlelab's own traced boots checked with
the parameters each window had (docs/replay.md)."""
