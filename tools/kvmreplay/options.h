/* build/idlelab-replay's option values: times, counts, lists and K=V,... parameter sets. */
#ifndef IDLELAB_REPLAY_OPTIONS_H
#define IDLELAB_REPLAY_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most values a what-if list takes. */
#define RP_MAX_VALUES 16

/* "200us" (ns, us, ms, s; bare: ns) into ns; false if not a time or beyond KVM's u32. */
bool rp_parse_time(const char *s, size_t n, uint32_t *out);
/* A decimal count within u32. */
bool rp_parse_count(const char *s, size_t n, uint32_t *out);
/* "V,V,..." into out[] (at most max); the exit code, with a line on stderr naming opt. */
int rp_parse_list(const char *opt, const char *s, bool time, uint32_t *out, unsigned *n,
		  unsigned max);

/* One key of a K=V,... set and where its value goes. */
enum rp_kv_kind {
	RP_KV_TIME,  /* uint32_t *dst */
	RP_KV_COUNT, /* uint32_t *dst */
	RP_KV_FLAG,  /* bool *dst, 0 or 1 */
	RP_KV_FORM,  /* enum hp_form *dst, 2022 or 2021 */
};
struct rp_kv {
	const char *name;
	enum rp_kv_kind kind;
	void *dst;
	bool *given; /* set when the key is given (NULL: not kept) */
};
/* "K=V,..." onto the keys' destinations; false with msg naming the part that was wrong. */
bool rp_parse_kv(const char *opt, const char *s, const struct rp_kv *keys, unsigned nkeys,
		 char *msg, size_t len);

#endif
