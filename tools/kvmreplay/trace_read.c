/*
 * The three recorders' line grammars are one but for the thread and the event's name:
 *   tracefs, trace-cmd:  COMM-TID [CPU] FLAGS? TS: kvm_vcpu_wakeup: BODY   (tracefs may add
 *                        "(TGID)" after TID; trace-cmd has no FLAGS unless -l)
 *   perf script:         COMM TID [CPU] TS: kvm:kvm_vcpu_wakeup: BODY       (or PID/TID)
 * so a line is read from its event name backwards: COMM may hold spaces and dashes ("CPU
 * 0/KVM"), the fields after it never do. The files' headers tell tracefs ("# tracer:") from
 * trace-cmd ("cpus=", "version =").
 */
#define _GNU_SOURCE /* memmem */
#include "tools/kvmreplay/trace_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tools/kvmreplay/exits.h"

const char *const rp_format_names[] = {"unknown", "tracefs trace", "trace-cmd report",
				       "perf script"};

static const char WAKEUP[] = "kvm_vcpu_wakeup", POLL_NS[] = "kvm_halt_poll_ns",
		  CPU_IDLE[] = "cpu_idle";

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* An unsigned decimal at *p..end; advances *p. */
static bool number(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || !is_digit(*s))
		return false;
	while (s < end && is_digit(*s)) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	*p = s;
	*out = v;
	return true;
}

static bool literal(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

static void spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* "wait time N ns, polling valid" */
static bool wakeup_body(const char *p, const char *end, struct rp_event *e)
{
	if (literal(&p, end, "wait"))
		e->waited = true;
	else if (literal(&p, end, "poll"))
		e->waited = false;
	else
		return false;
	if (!literal(&p, end, " time ") || !number(&p, end, &e->halt_ns) ||
	    !literal(&p, end, " ns, polling "))
		return false;
	if (literal(&p, end, "valid"))
		e->valid = true;
	else if (literal(&p, end, "invalid"))
		e->valid = false;
	else
		return false;
	spaces(&p, end);
	return p == end;
}

/* "vcpu N: halt_poll_ns NEW (grow OLD)" */
static bool poll_ns_body(const char *p, const char *end, struct rp_event *e)
{
	uint64_t vcpu, nw, old;

	if (!literal(&p, end, "vcpu ") || !number(&p, end, &vcpu) ||
	    !literal(&p, end, ": halt_poll_ns ") || !number(&p, end, &nw) ||
	    !literal(&p, end, " ("))
		return false;
	if (literal(&p, end, "grow "))
		e->grow = true;
	else if (literal(&p, end, "shrink "))
		e->grow = false;
	else
		return false;
	if (!number(&p, end, &old) || !literal(&p, end, ")"))
		return false;
	spaces(&p, end);
	if (p != end || vcpu > INT32_MAX || nw > UINT32_MAX || old > UINT32_MAX)
		return false;
	e->vcpu = (int)vcpu, e->new = (uint32_t)nw, e->old = (uint32_t)old;
	return true;
}

/* "state=1 cpu_id=0" */
static bool idle_body(const char *p, const char *end, struct rp_event *e)
{
	uint64_t state, cpu;

	if (!literal(&p, end, "state=") || !number(&p, end, &state) ||
	    !literal(&p, end, " cpu_id=") || !number(&p, end, &cpu))
		return false;
	spaces(&p, end);
	if (p != end || state > UINT32_MAX || cpu > INT32_MAX)
		return false;
	e->idle_state = (uint32_t)state, e->idle_cpu = (int)cpu;
	return true;
}

/* The digits ending just before q (q > start): their value and where they begin. */
static const char *digits_back(const char *start, const char *q, uint64_t *v)
{
	const char *b = q;

	while (b > start && is_digit(b[-1]))
		b--;
	if (b == q)
		return NULL;
	const char *p = b;
	if (!number(&p, q, v))
		return NULL;
	return b;
}

/* TS before "q" (which points at the ':' after it): seconds.fraction into ns. */
static const char *timestamp_back(const char *start, const char *q, struct rp_event *e)
{
	const char *b = q, *dot = NULL;
	uint64_t sec = 0;

	while (b > start && (is_digit(b[-1]) || b[-1] == '.')) {
		b--;
		if (*b == '.') {
			if (dot)
				return NULL;
			dot = b;
		}
	}
	if (b == q || b == dot)
		return NULL;
	const char *p = b;
	if (!number(&p, dot ? dot : q, &sec))
		return NULL;
	if (dot) {
		uint64_t frac = 0, scale = 1;
		unsigned nd = 0;
		for (p = dot + 1; p < q; p++, nd++)
			if (nd < 9)
				frac = frac * 10 + (uint64_t)(*p - '0');
		for (; nd < 9; nd++)
			scale *= 10;
		e->t_ns = sec * 1000000000ull + frac * scale;
		e->unitless = false;
	} else {
		e->t_ns = sec;
		e->unitless = true;
	}
	return b;
}

int rp_parse_line(const char *s, size_t len, struct rp_event *e)
{
	const char *end = s + len, *name, *p, *q;
	size_t nlen;
	uint64_t v;

	while (end > s && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	if (len && s[0] == '#')
		return 0;
	name = memmem(s, (size_t)(end - s), WAKEUP, sizeof WAKEUP - 1);
	e->wakeup = name != NULL;
	e->idle = false;
	nlen = sizeof WAKEUP - 1;
	if (!name) {
		name = memmem(s, (size_t)(end - s), POLL_NS, sizeof POLL_NS - 1);
		nlen = sizeof POLL_NS - 1;
	}
	if (!name) { /* cpu_idle, not cpu_idle_miss or another of power's */
		name = memmem(s, (size_t)(end - s), CPU_IDLE, sizeof CPU_IDLE - 1);
		nlen = sizeof CPU_IDLE - 1;
		if (!name || name + nlen >= end || name[nlen] != ':')
			return 0;
		e->idle = true;
	}
	e->grammar = RP_FMT_TRACEFS;
	q = name;
	if (!e->idle && q - s >= 4 && memcmp(q - 4, "kvm:", 4) == 0) {
		e->grammar = RP_FMT_PERF;
		q -= 4;
	} else if (e->idle && q - s >= 6 && memcmp(q - 6, "power:", 6) == 0) {
		e->grammar = RP_FMT_PERF;
		q -= 6;
	}
	/* back over spaces to "TS:" */
	while (q > s && q[-1] == ' ')
		q--;
	if (q == s || q[-1] != ':')
		return -1;
	q = timestamp_back(s, q - 1, e);
	if (!q)
		return -1;
	while (q > s && q[-1] == ' ')
		q--;
	if (q > s && q[-1] != ']') { /* tracefs's (and trace-cmd -l's) flags */
		while (q > s && q[-1] != ' ' && q[-1] != ']')
			q--;
		while (q > s && q[-1] == ' ')
			q--;
	}
	if (q == s || q[-1] != ']')
		return -1;
	q = digits_back(s, q - 1, &v); /* the host CPU */
	if (!q || q == s || q[-1] != '[')
		return -1;
	q--;
	while (q > s && q[-1] == ' ')
		q--;
	if (q > s && q[-1] == ')') { /* tracefs's record-tgid column */
		while (q > s && q[-1] != '(')
			q--;
		if (q == s)
			return -1;
		q--;
		while (q > s && q[-1] == ' ')
			q--;
	}
	q = digits_back(s, q, &v);
	if (!q || v > INT32_MAX)
		return -1;
	if (e->grammar == RP_FMT_TRACEFS && (q == s || q[-1] != '-'))
		return -1;
	e->tid = (int)v;
	p = name + nlen;
	if (p >= end || *p != ':')
		return -1;
	p++;
	spaces(&p, end);
	if (e->idle)
		return idle_body(p, end, e) ? 1 : -1;
	return (e->wakeup ? wakeup_body(p, end, e) : poll_ns_body(p, end, e)) ? 1 : -1;
}

void *rp_grow(void *array, size_t *cap, size_t size, size_t first)
{
	*cap = *cap ? 2 * *cap : first;
	array = realloc(array, *cap * size);
	if (!array) {
		perror("idlelab-replay");
		exit(RP_EXIT_READ);
	}
	return array;
}

static struct rp_vcpu *vcpu_of(struct rp_trace *t, int tid, size_t *hint)
{
	if (*hint < t->nv && t->v[*hint].tid == tid)
		return &t->v[*hint];
	for (size_t i = 0; i < t->nv; i++)
		if (t->v[i].tid == tid)
			return &t->v[*hint = i];
	if (t->nv == t->capv)
		t->v = rp_grow(t->v, &t->capv, sizeof *t->v, 16);
	t->v[t->nv] = (struct rp_vcpu){.tid = tid, .id = -1};
	*hint = t->nv;
	return &t->v[t->nv++];
}

static void add_halt(struct rp_vcpu *v, const struct rp_halt *h)
{
	if (v->n == v->cap)
		v->h = rp_grow(v->h, &v->cap, sizeof *v->h, 1024);
	v->h[v->n++] = *h;
}

struct kvm_reader {
	struct rp_trace *t;
	size_t hint;
};

static void take(void *ctx, const struct rp_event *e)
{
	struct kvm_reader *r = ctx;
	struct rp_trace *t = r->t;
	struct rp_vcpu *v;

	if (e->idle) /* a guest's event in a host's trace: not KVM's */
		return;
	v = vcpu_of(t, e->tid, &r->hint);

	if (!t->halts && !t->changes)
		t->t_first = e->t_ns;
	t->t_last = e->t_ns;
	t->unitless |= e->unitless;
	if (!e->wakeup) {
		t->changes++;
		v->id = e->vcpu;
		if (v->has_pending_change) {
			v->pending.change = RP_SEVERAL;
		} else {
			v->pending.change = e->grow ? RP_GROW : RP_SHRINK;
			v->pending.old = e->old;
			v->pending.new = e->new;
		}
		v->has_pending_change = true;
		return;
	}
	struct rp_halt h = {.t_ns = e->t_ns,
			    .halt_ns = e->halt_ns,
			    .waited = e->waited,
			    .valid = e->valid,
			    .window = RP_UNKNOWN};
	if (v->has_pending_change) {
		h.change = v->pending.change, h.old = v->pending.old, h.new = v->pending.new;
		v->has_pending_change = false;
	}
	t->halts++;
	add_halt(v, &h);
}

/* "entries-in-buffer/entries-written: 120/180", trace-cmd's "[LOST 12 EVENTS]", perf's
 * "LOST" lines: what the recorder says it dropped. */
static void lost_events(uint64_t *lost, const char *line)
{
	const char *p;
	uint64_t a, b;

	if ((p = strstr(line, "entries-in-buffer/entries-written:")) != NULL) {
		p += strlen("entries-in-buffer/entries-written:");
		if (sscanf(p, " %lu/%lu", &a, &b) == 2 && b > a)
			*lost += b - a;
	} else if ((p = strstr(line, "[LOST ")) != NULL) {
		if (sscanf(p, "[LOST %lu", &a) == 1)
			*lost += a;
	}
}

static enum rp_format header_format(const char *line)
{
	if (strncmp(line, "# tracer:", 9) == 0)
		return RP_FMT_TRACEFS;
	if (strncmp(line, "cpus=", 5) == 0 || strncmp(line, "version = ", 10) == 0)
		return RP_FMT_TRACE_CMD;
	return RP_FMT_UNKNOWN;
}

int rp_read_events(const char *path, void (*take_event)(void *ctx, const struct rp_event *e),
		   void *ctx, uint64_t *lines, uint64_t *lost, enum rp_format *format)
{
	static char line[1 << 16];
	gzFile f = strcmp(path, "-") == 0 ? gzdopen(0, "rb") : gzopen(path, "rb");
	enum rp_format header = RP_FMT_UNKNOWN;
	enum rp_format grammar = RP_FMT_UNKNOWN;
	uint64_t grammar_line = 0, header_line = 0;
	int code = RP_EXIT_OK;

	*lines = *lost = 0;
	if (!f) {
		fprintf(stderr, "idlelab-replay: %s: %s\n", path, strerror(errno ? errno : EIO));
		return RP_EXIT_READ;
	}
	gzbuffer(f, 1 << 18);
	while (gzgets(f, line, sizeof line)) {
		size_t len = strlen(line);
		struct rp_event e;
		int r;

		(*lines)++;
		if (len == sizeof line - 1 && line[len - 1] != '\n') { /* longer than ours are */
			int c;
			while ((c = gzgetc(f)) != -1 && c != '\n')
				;
			continue;
		}
		enum rp_format h = header_format(line);
		if (h != RP_FMT_UNKNOWN) {
			if (header != RP_FMT_UNKNOWN && header != h) {
				fprintf(
				    stderr,
				    "idlelab-replay: %s:%lu: a %s header in a %s (line %lu): two "
				    "formats mixed\n",
				    path, *lines, rp_format_names[h], rp_format_names[header],
				    header_line);
				code = RP_EXIT_MIXED;
				break;
			}
			header = h, header_line = *lines;
		}
		if (line[0] == '#' || strstr(line, "LOST")) {
			lost_events(lost, line);
			continue;
		}
		r = rp_parse_line(line, len, &e);
		if (r == 0)
			continue;
		if (r < 0) {
			fprintf(stderr,
				"idlelab-replay: %s:%lu: a kvm event line cut short or not "
				"as any recorder prints it: %.*s\n",
				path, *lines, (int)(len && line[len - 1] == '\n' ? len - 1 : len),
				line);
			code = RP_EXIT_TRUNCATED;
			break;
		}
		if (grammar != RP_FMT_UNKNOWN && grammar != e.grammar) {
			fprintf(stderr,
				"idlelab-replay: %s:%lu: a %s line after %s lines (line %lu): two "
				"formats mixed\n",
				path, *lines, e.grammar == RP_FMT_PERF ? "perf script" : "tracefs",
				grammar == RP_FMT_PERF ? "perf script" : "tracefs or trace-cmd",
				grammar_line);
			code = RP_EXIT_MIXED;
			break;
		}
		if (grammar == RP_FMT_UNKNOWN)
			grammar = e.grammar, grammar_line = *lines;
		if (e.grammar == RP_FMT_PERF && header != RP_FMT_UNKNOWN) {
			fprintf(stderr,
				"idlelab-replay: %s:%lu: a perf script line in a %s (its header at "
				"line %lu): two formats mixed\n",
				path, *lines, rp_format_names[header], header_line);
			code = RP_EXIT_MIXED;
			break;
		}
		take_event(ctx, &e);
	}
	if (code == RP_EXIT_OK && !gzeof(f)) {
		int err;
		const char *msg = gzerror(f, &err);
		fprintf(stderr, "idlelab-replay: %s: %s\n", path,
			err == Z_ERRNO ? strerror(errno) : msg);
		code = RP_EXIT_READ;
	}
	gzclose(f);
	if (code != RP_EXIT_OK)
		return code;
	*format = grammar == RP_FMT_PERF       ? RP_FMT_PERF
		  : header == RP_FMT_TRACE_CMD ? RP_FMT_TRACE_CMD
					       : RP_FMT_TRACEFS;
	return RP_EXIT_OK;
}

int rp_read_trace(const char *path, struct rp_trace *t)
{
	struct kvm_reader r = {t, 0};
	int code;

	*t = (struct rp_trace){0};
	code = rp_read_events(path, take, &r, &t->lines, &t->lost, &t->format);
	if (code != RP_EXIT_OK)
		return code;
	if (t->halts == 0) {
		fprintf(stderr,
			"idlelab-replay: %s: no kvm:kvm_vcpu_wakeup event in %lu lines (record "
			"kvm:kvm_vcpu_wakeup and kvm:kvm_halt_poll_ns)\n",
			path, t->lines);
		return RP_EXIT_NO_EVENTS;
	}
	return RP_EXIT_OK;
}

void rp_trace_free(struct rp_trace *t)
{
	for (size_t i = 0; i < t->nv; i++)
		free(t->v[i].h);
	free(t->v);
	*t = (struct rp_trace){0};
}
