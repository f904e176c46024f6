/* The values of build/idlelab-replay's options, one parser each (options.h). */
#include "tools/kvmreplay/options.h"

#include <stdio.h>
#include <string.h>

#include "tools/kvmreplay/exits.h"
#include "tools/sim/host_poll.h"

bool rp_parse_time(const char *s, size_t n, uint32_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}, {"", 1}};
	uint64_t v = 0;
	size_t i = 0;

	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > UINT32_MAX)
			return false;
	}
	if (i == 0)
		return false;
	for (unsigned u = 0; u < sizeof units / sizeof units[0]; u++)
		if (n - i == strlen(units[u].suffix) &&
		    memcmp(s + i, units[u].suffix, n - i) == 0) {
			if (v * units[u].mult > UINT32_MAX)
				return false;
			*out = (uint32_t)(v * units[u].mult);
			return true;
		}
	return false;
}

bool rp_parse_count(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > UINT32_MAX)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

int rp_parse_list(const char *opt, const char *s, bool time, uint32_t *out, unsigned *n,
		  unsigned max)
{
	*n = 0;
	while (*s) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);

		if (*n == max) {
			fprintf(stderr, "idlelab-replay: %s: at most %u values\n", opt, max);
			return RP_EXIT_USAGE;
		}
		if (!(time ? rp_parse_time(s, len, &out[*n]) : rp_parse_count(s, len, &out[*n]))) {
			fprintf(stderr, "idlelab-replay: %s: '%.*s' is not %s\n", opt, (int)len, s,
				time ? "a time (ns, us, ms, s)" : "a count");
			return RP_EXIT_USAGE;
		}
		(*n)++;
		s += len;
		if (*s == ',')
			s++;
	}
	if (*n == 0) {
		fprintf(stderr, "idlelab-replay: %s: no values\n", opt);
		return RP_EXIT_USAGE;
	}
	return RP_EXIT_OK;
}

static bool take_value(const struct rp_kv *k, const char *v, size_t n)
{
	uint32_t x;

	switch (k->kind) {
	case RP_KV_TIME:
	case RP_KV_COUNT:
		return (k->kind == RP_KV_TIME ? rp_parse_time : rp_parse_count)(v, n, k->dst);
	case RP_KV_FLAG:
		if (!rp_parse_count(v, n, &x) || x > 1)
			return false;
		*(bool *)k->dst = x;
		return true;
	case RP_KV_FORM:
		if (!rp_parse_count(v, n, &x) || (x != 2021 && x != 2022))
			return false;
		*(enum hp_form *)k->dst = x == 2021 ? HP_FORM_2021 : HP_FORM_2022;
		return true;
	}
	return false;
}

bool rp_parse_kv(const char *opt, const char *s, const struct rp_kv *keys, unsigned nkeys,
		 char *msg, size_t len)
{
	static const char *const kinds[] = {"a time (ns/us/ms/s)", "a count", "0 or 1",
					    "2022 or 2021"};

	while (*s) {
		const char *comma = strchr(s, ','), *eq = strchr(s, '=');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);
		const struct rp_kv *k = NULL;

		if (!eq || eq > s + n) {
			snprintf(msg, len, "%s: '%.*s' is not K=V", opt, (int)n, s);
			return false;
		}
		for (unsigned i = 0; i < nkeys; i++)
			if ((size_t)(eq - s) == strlen(keys[i].name) &&
			    memcmp(s, keys[i].name, (size_t)(eq - s)) == 0)
				k = &keys[i];
		if (!k) {
			size_t used =
			    (size_t)snprintf(msg, len, "%s: '%.*s': K is one of", opt, (int)n, s);
			for (unsigned i = 0; i < nkeys && used < len; i++)
				used += (size_t)snprintf(msg + used, len - used, "%s %s",
							 i ? "," : "", keys[i].name);
			return false;
		}
		if (!take_value(k, eq + 1, n - (size_t)(eq - s) - 1)) {
			snprintf(msg, len, "%s: '%.*s': %s takes %s", opt, (int)n, s, k->name,
				 kinds[k->kind]);
			return false;
		}
		if (k->given)
			*k->given = true;
		s += n;
		if (*s == ',')
			s++;
	}
	return true;
}
