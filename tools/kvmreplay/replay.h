/*
 * A trace replayed through the transcription of kvm_vcpu_halt (tools/sim/host_poll.c): the
 * check (does the transcription, under the host's parameters, make every window change the
 * trace recorded?) and the what-if (the same halts under other parameters). docs/replay.md.
 */
#ifndef IDLELAB_REPLAY_REPLAY_H
#define IDLELAB_REPLAY_REPLAY_H

#include <stdio.h>

#include "tools/kvmreplay/trace_read.h"
#include "tools/sim/host_poll.h"

/* The parameters in force from t0_ns on: written somewhere in [t0_ns, t1_ns] (a switch; a
 * halt that begins or ends inside it may have seen either side). The first entry's are the
 * parameters from the trace's start. */
struct rp_sched_entry {
	uint64_t t0_ns, t1_ns;
	struct hp_params p;
};
struct rp_schedule {
	struct rp_sched_entry *e;
	size_t n;
};

/* How a halt's recorded change differs from the replayed one. */
enum rp_class {
	RP_CLS_AGREE,
	RP_CLS_KIND,	/* grow, shrink or none other than replayed */
	RP_CLS_VALUES,	/* the same kind, other old or new window */
	RP_CLS_SEVERAL, /* two changes before one wake-up: an event lost between them */
	RP_CLS_COUNT
};
extern const char *const rp_class_names[];

struct rp_vcpu_check {
	uint64_t checked, agree, unsynced, either_side;
	uint64_t spanning; /* began under other parameters than it ended under */
	uint64_t by_class[RP_CLS_COUNT];
};

struct rp_check {
	struct rp_vcpu_check *v; /* per trace vCPU */
	struct rp_vcpu_check all;
};

/* The check: every vCPU from its first recorded change (from its first halt at window 0 with
 * from_start), each mismatch re-synchronised at what the trace recorded. The first `show`
 * mismatches are described on `log`. */
void rp_check(struct rp_trace *t, const struct rp_schedule *s, bool from_start, unsigned show,
	      FILE *log, struct rp_check *out);

/* What a setting does to a vCPU's halts (or what the trace says they did). */
struct rp_stats {
	uint64_t halts, attempted, successful, poll_ns, slept, caught;
};
/* The trace's own, as the check replayed its windows (a failed poll counted as its whole
 * window: the trace does not say when KVM stopped polling). */
void rp_recorded(const struct rp_vcpu *v, struct rp_stats *out);
/* First order: each halt's wake-up comes halt_ns after it began, as in the trace (less
 * wake_cost_ns for a halt that slept: what the host took to run a sleeping vCPU thread again
 * after its wake-up, which a polling one does not take); a poll of window W catches it iff
 * that is <= W; a caught wake-up is one the trace slept for. */
void rp_whatif(const struct rp_vcpu *v, const struct hp_params *p, uint64_t wake_cost_ns,
	       struct rp_stats *out);

/* Parameters read off the trace's own window changes; `why` says, per parameter, whether
 * it was determined or assumed, and the bounds the trace puts on max. */
void rp_infer(const struct rp_trace *t, struct hp_params *p, char *why, size_t whylen);

#endif
