/*
 * The command line: `name=value` tokens. The simulator's own keys (the vCPU count, KVM's
 * halt-polling parameters, the cost table) are parsed here; every other token is a guest
 * knob and goes, joined, through the kernel's own parser (kernel/knobs/parse.c), so the
 * simulator accepts exactly what the kernel accepts and refuses the rest with its message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/policy/governors.h"
#include "tools/sim/sim.h"

#define CMDLINE_MAX 8192

/* A number with an optional ns/us/ms/s unit (times) within [lo, hi]. */
static bool parse_num(const char *v, bool time, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long n;
	uint64_t mul = 1;

	if (!*v || *v == '-')
		return false;
	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || end == v)
		return false;
	if (time && *end) {
		if (!strcmp(end, "ns"))
			mul = 1;
		else if (!strcmp(end, "us"))
			mul = 1000;
		else if (!strcmp(end, "ms"))
			mul = 1000000;
		else if (!strcmp(end, "s"))
			mul = 1000000000;
		else
			return false;
	} else if (*end) {
		return false;
	}
	if (n > hi / mul || n * mul < lo)
		return false;
	*out = n * mul;
	return true;
}

struct sim_key {
	const char *name;
	bool time;
	uint64_t lo, hi;
	const char *what;
};

static const struct sim_key keys[] = {
    {"smp", false, 1, SIM_MAX_CPUS, "an integer 1..64"},
    {"halt_poll_ns", true, 0, UINT32_MAX, "a time 0..4294967295ns (kvm module parameter)"},
    {"halt_poll_ns_grow", false, 0, UINT32_MAX, "an integer 0..4294967295"},
    {"halt_poll_ns_grow_start", true, 0, UINT32_MAX, "a time 0..4294967295ns"},
    {"halt_poll_ns_shrink", false, 0, UINT32_MAX, "an integer 0..4294967295"},
    {"kvm_cap_halt_poll", true, 0, UINT32_MAX,
     "none or a time 0..4294967295ns (the VM's KVM_CAP_HALT_POLL)"},
    {"trace", false, 0, 2, "0, 1 or 2"},
    {"halt_poll_fixed", false, 0, 1, "0 or 1 (1: pre-dynamic KVM, every halt polls the max)"},
    {"script_window", true, 0, UINT32_MAX, "a time 0..4294967295ns"},
};
#define KEY_SCRIPT_WINDOW 8
#define NKEYS		  (sizeof(keys) / sizeof(keys[0]))

static int set_key(unsigned k, uint64_t v, struct sim_config *cfg)
{
	switch (k) {
	case 0:
		cfg->smp = (unsigned)v;
		break;
	case 1:
		cfg->host.halt_poll_ns = (uint32_t)v;
		break;
	case 2:
		cfg->host.grow = (uint32_t)v;
		break;
	case 3:
		cfg->host.grow_start = (uint32_t)v;
		break;
	case 4:
		cfg->host.shrink = (uint32_t)v;
		break;
	case 5:
		cfg->host.vm_override = true;
		cfg->host.vm_max = (uint32_t)v;
		break;
	case 6:
		cfg->trace = v;
		break;
	case KEY_SCRIPT_WINDOW:
		cfg->script_window_set = true;
		cfg->script_window = v;
		break;
	default:
		cfg->host.fixed = v;
		break;
	}
	return 0;
}

/*
 * script=FILE: one idle period a line, `L [H]` in ns (`#` starts a comment): CPU 0's thread
 * sleeps L; if H is given and not 0 and the period halts, the wake comes H after the halt
 * begins. A recorded sequence replayed (tests/boot/test_sim_trace.py).
 */
static int load_script(const char *path, struct sim_config *cfg, FILE *err)
{
	static uint64_t len[SIM_SCRIPT_MAX], halt[SIM_SCRIPT_MAX];
	char line[256];
	unsigned n = 0, lineno = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(err, "idlelab-sim: script: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		unsigned long long l, h = 0;

		lineno++;
		p[strcspn(p, "#\n")] = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			continue;
		errno = 0;
		l = strtoull(p, &end, 10);
		if (end != p && (*end == ' ' || *end == '\t'))
			h = strtoull(end, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\r')
			end++;
		if (end == p || *end || errno || l == 0 || strchr(p, '-')) {
			fprintf(err,
				"idlelab-sim: script: %s line %u: expected `L [H]` in ns, L > 0\n",
				path, lineno);
			fclose(f);
			return -1;
		}
		if (n == SIM_SCRIPT_MAX) {
			fprintf(err, "idlelab-sim: script: %s: more than %d periods\n", path,
				SIM_SCRIPT_MAX);
			fclose(f);
			return -1;
		}
		len[n] = l;
		halt[n++] = h;
	}
	fclose(f);
	if (!n) {
		fprintf(err, "idlelab-sim: script: %s has no period\n", path);
		return -1;
	}
	cfg->script = len;
	cfg->script_halt = halt;
	cfg->script_len = n;
	return 0;
}

int sim_parse_args(int argc, char **argv, struct sim_config *cfg, FILE *err)
{
	static char cmdline[CMDLINE_MAX];
	char msg[KNOB_ERR_MAX + 256];
	const char *costs = "here";
	bool seen[NKEYS + 1] = {0};
	size_t len = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->smp = 2;
	/* KVM's current x86 defaults (spec §2.1) */
	cfg->host = HP_X86_DEFAULTS;
	cmdline[0] = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t n = eq ? (size_t)(eq - a) : strlen(a);
		unsigned k;
		uint64_t v;

		if (n == 5 && !strncmp(a, "costs", 5)) {
			if (seen[NKEYS] || !eq || !eq[1]) {
				fprintf(err,
					"idlelab-sim: costs: %s; expected here, here:RESULTS, "
					"hardware or a cost file\n",
					seen[NKEYS] ? "given twice" : "missing value");
				return SIM_EXIT_BAD;
			}
			seen[NKEYS] = true;
			costs = eq + 1;
			continue;
		}
		if (n == 6 && !strncmp(a, "script", 6)) {
			if (cfg->script || !eq || !eq[1]) {
				fprintf(err, "idlelab-sim: script: %s; expected a file\n",
					cfg->script ? "given twice" : "missing value");
				return SIM_EXIT_BAD;
			}
			if (load_script(eq + 1, cfg, err))
				return SIM_EXIT_BAD;
			continue;
		}
		for (k = 0; k < NKEYS; k++)
			if (strlen(keys[k].name) == n && !strncmp(a, keys[k].name, n))
				break;
		if (k == NKEYS) { /* a guest knob: the kernel's parser decides */
			if (len + strlen(a) + 2 > sizeof(cmdline)) {
				fprintf(err, "idlelab-sim: the guest command line is too long\n");
				return SIM_EXIT_BAD;
			}
			len += (size_t)sprintf(cmdline + len, "%s%s", len ? " " : "", a);
			continue;
		}
		if (seen[k]) {
			fprintf(err, "idlelab-sim: %s: given twice\n", keys[k].name);
			return SIM_EXIT_BAD;
		}
		seen[k] = true;
		if (k == 5 && eq && !strcmp(eq + 1, "none"))
			continue;
		if (!eq || !parse_num(eq + 1, keys[k].time, keys[k].lo, keys[k].hi, &v)) {
			fprintf(err, "idlelab-sim: %s: expected %s, got '%s'\n", keys[k].name,
				keys[k].what, eq ? eq + 1 : "");
			return SIM_EXIT_BAD;
		}
		set_key(k, v, cfg);
	}
	if (knobs_parse(cmdline, &cfg->knobs, msg, KNOB_ERR_MAX) != KNOB_OK) {
		fprintf(err, "idlelab-sim: %s\n", msg);
		return SIM_EXIT_BAD;
	}
	if (cfg->script_window_set &&
	    (!cfg->script || idle_governors[cfg->knobs.v[KNOB_governor]] != &gov_haltpoll)) {
		fprintf(err, "idlelab-sim: script_window: needs script= and "
			     "cpuidle.governor=haltpoll (it sets haltpoll's window)\n");
		return SIM_EXIT_BAD;
	}
	if (sim_costs_load(costs, &cfg->costs, msg, sizeof(msg))) {
		fprintf(err, "idlelab-sim: %s\n", msg);
		return SIM_EXIT_BAD;
	}
	return 0;
}
