/*
 * KVM's halt events as people record them (docs/replay.md): `trace-cmd report` text,
 * `perf script` text, or tracefs's own `trace` file, plain or gzip. Each vCPU thread's halts in
 * order, each with the window change kvm_vcpu_halt traced just before its wake-up.
 */
#ifndef IDLELAB_REPLAY_TRACE_READ_H
#define IDLELAB_REPLAY_TRACE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rp_format {
	RP_FMT_UNKNOWN,
	RP_FMT_TRACEFS,
	RP_FMT_TRACE_CMD,
	RP_FMT_PERF
};
extern const char *const rp_format_names[];

#define RP_UNKNOWN UINT32_MAX

enum rp_change {
	RP_NONE,
	RP_GROW,
	RP_SHRINK,
	RP_SEVERAL /* more than one before a wake-up */
};

/* One kvm_vcpu_halt, from its kvm_vcpu_wakeup and the kvm_halt_poll_ns before it. */
struct rp_halt {
	uint64_t t_ns;	  /* the wake-up event's time (the halt's end) */
	uint64_t halt_ns; /* its time halted, polling included */
	uint32_t old, new;
	uint8_t change; /* enum rp_change */
	bool waited, valid;
	/* set by the check: the window the halt polled with (RP_UNKNOWN before the vCPU's
	 * first change), and whether it neither polled nor slept (the wake-up was there) */
	uint32_t window;
	bool pending;
};

struct rp_vcpu {
	int tid;
	int id; /* "vcpu N" of its kvm_halt_poll_ns events, -1 before one is seen */
	struct rp_halt *h;
	size_t n, cap;
	bool has_pending_change;
	struct rp_halt pending; /* a change waiting for its wake-up */
};

struct rp_trace {
	enum rp_format format;
	struct rp_vcpu *v;
	size_t nv, capv;
	uint64_t halts, changes, lines;
	uint64_t lost; /* events the recorder said it dropped */
	bool unitless; /* the clock printed no fraction (a counter, not seconds) */
	uint64_t t_first, t_last;
};

/* Reads `path` ("-" for stdin) into t; on failure prints one line to stderr and returns the
 * exit code (tools/kvmreplay/exits.h). */
int rp_read_trace(const char *path, struct rp_trace *t);
/* One line's parse, for the reader and its tests: 1 an event (filled in), 0 not one of
 * ours, -1 one of ours cut short or malformed. */
struct rp_event {
	enum rp_format grammar; /* RP_FMT_PERF or RP_FMT_TRACEFS (trace-cmd's is the same) */
	int tid;
	uint64_t t_ns;
	bool unitless;
	bool wakeup; /* else a kvm_halt_poll_ns, or: */
	bool idle;   /* a guest's power:cpu_idle (idle_state 4294967295: the CPU left it) */
	uint32_t idle_state;
	int idle_cpu;
	bool waited, valid, grow;
	uint64_t halt_ns;
	int vcpu;
	uint32_t old, new;
};
int rp_parse_line(const char *s, size_t len, struct rp_event *e);
/* The reading loop under both: every event line of `path` to take(ctx, e), in order, with
 * the formats checked; *lines and *lost counted, *format the file's. The exit code (a line
 * on stderr if not RP_EXIT_OK). */
int rp_read_events(const char *path, void (*take)(void *ctx, const struct rp_event *e), void *ctx,
		   uint64_t *lines, uint64_t *lost, enum rp_format *format);
void rp_trace_free(struct rp_trace *t);
/* An array full at *cap elements of `size` made larger (first: its first capacity); out of
 * memory ends the process (RP_EXIT_READ), as nothing read could be kept. */
void *rp_grow(void *array, size_t *cap, size_t size, size_t first);

#endif
