#include <stdio.h>
#include <string.h>

#include "tools/linuxguest/knobpick.h"

const enum knob_id linuxguest_knobs[] = {
    KNOB_workload, KNOB_duration,   KNOB_warmup,      KNOB_period,
    KNOB_cpus,	   KNOB_think,	    KNOB_window_sync, KNOB_window_sync_timeout,
    KNOB_windows,  KNOB_window_gap,
};
const size_t linuxguest_nknobs = sizeof(linuxguest_knobs) / sizeof(linuxguest_knobs[0]);

/* idlelab knobs that are Linux's own parameters of the same name and meaning: Linux reads
 * them (the haltpoll ones where its kernel has the haltpoll governor). */
static const enum knob_id linux_params[] = {
    KNOB_idle,
    KNOB_haltpoll_force,
    KNOB_governor,
    KNOB_guest_halt_poll_ns,
    KNOB_guest_halt_poll_grow,
    KNOB_guest_halt_poll_shrink,
    KNOB_guest_halt_poll_grow_start,
    KNOB_guest_halt_poll_allow_shrink,
};

bool linuxguest_honours(enum knob_id id)
{
	for (size_t i = 0; i < linuxguest_nknobs; i++)
		if (linuxguest_knobs[i] == id)
			return true;
	return false;
}

/* The knob named by name[0..len), or -1. */
static int knob_named(const char *name, size_t len)
{
	for (int i = 0; i < KNOB__COUNT; i++)
		if (strlen(knob_defs[i].name) == len && memcmp(knob_defs[i].name, name, len) == 0)
			return i;
	return -1;
}

static bool honoured_name(const char *name, size_t len)
{
	int id = knob_named(name, len);

	return id >= 0 && linuxguest_honours((enum knob_id)id);
}

static bool linux_param(enum knob_id id)
{
	for (size_t i = 0; i < sizeof(linux_params) / sizeof(linux_params[0]); i++)
		if (linux_params[i] == id)
			return true;
	return false;
}

int linuxguest_foreign(const char *cmdline, char *err, size_t errlen)
{
	while (cmdline && *cmdline) {
		const char *tok = cmdline + strspn(cmdline, " \t\n");
		size_t len = strcspn(tok, " \t\n");
		size_t name = strcspn(tok, "=");
		int id;

		cmdline = tok + len;
		if (len == 0)
			break;
		id = knob_named(tok, name < len ? name : len);
		if (id < 0 || linuxguest_honours((enum knob_id)id) || linux_param((enum knob_id)id))
			continue;
		snprintf(err, errlen,
			 "%s: an idlelab kernel knob the Linux guest does not have (its knobs are "
			 "listed in docs/records.md, \"The Linux guest\")",
			 knob_defs[id].name);
		return KNOB_E_UNKNOWN;
	}
	return KNOB_OK;
}

int linuxguest_pick(const char *cmdline, char *out, size_t outlen)
{
	size_t n = 0;

	if (outlen == 0)
		return -1;
	out[0] = '\0';
	while (cmdline && *cmdline) {
		const char *tok = cmdline + strspn(cmdline, " \t\n");
		size_t len = strcspn(tok, " \t\n");
		size_t name = strcspn(tok, "=");

		cmdline = tok + len;
		if (len == 0)
			break;
		if (!honoured_name(tok, name < len ? name : len))
			continue;
		if (n + (n > 0) + len + 1 > outlen)
			return -1;
		if (n > 0)
			out[n++] = ' ';
		memcpy(out + n, tok, len);
		n += len;
		out[n] = '\0';
	}
	return (int)n;
}

void linuxguest_idle_override(const char *cmdline, char *out, size_t outlen)
{
	bool off = false;

	snprintf(out, outlen, "none");
	while (cmdline && *cmdline) {
		const char *tok = cmdline + strspn(cmdline, " \t\n");
		size_t len = strcspn(tok, " \t\n");

		cmdline = tok + len;
		if (len > 5 && strncmp(tok, "idle=", 5) == 0)
			snprintf(out, outlen, "%.*s", (int)(len - 5), tok + 5);
		else if (len == 13 && strncmp(tok, "cpuidle.off=1", 13) == 0)
			off = true;
	}
	if (off && strcmp(out, "none") == 0)
		snprintf(out, outlen, "cpuidle.off");
}

int linuxguest_parse(const char *cmdline, struct knob_values *vals, char *err, size_t errlen)
{
	char picked[1024];
	int rc = linuxguest_foreign(cmdline, err, errlen);

	if (rc != KNOB_OK) {
		knobs_set_defaults(vals);
		return rc;
	}

	if (linuxguest_pick(cmdline, picked, sizeof(picked)) < 0) {
		knobs_set_defaults(vals);
		snprintf(err, errlen, "the idlelab knobs on the command line exceed %zu bytes",
			 sizeof(picked) - 1);
		return KNOB_E_SYNTAX;
	}
	rc = knobs_parse(picked, vals, err, errlen);
	if (rc != KNOB_OK)
		return rc;
	switch (vals->v[KNOB_workload]) {
	case WORKLOAD_NONE:
	case WORKLOAD_PINGPONG:
	case WORKLOAD_PERIODIC:
	case WORKLOAD_IDLE:
		return KNOB_OK;
	default:
		snprintf(err, errlen,
			 "workload=%s: the Linux guest runs none, pingpong, periodic or idle",
			 knob_defs[KNOB_workload].choices[vals->v[KNOB_workload]]);
		knobs_set_defaults(vals);
		return KNOB_E_VALUE;
	}
}
