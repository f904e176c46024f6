#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/linuxguest/cpuidle.h"

#define SYS_CPU "/sys/devices/system/cpu"

enum state_kind idle_kind_of(const char *name, const char *desc)
{
	if (strcmp(name, "POLL") == 0)
		return STATE_POLL;
	/* cpuidle-haltpoll names its one real state "haltpoll idle" (seen on Debian's 6.1;
	 * "haltpoll" elsewhere); acpi_idle says "ACPI HLT" for a C1 it enters by HLT (it may use
	 * MWAIT instead: "ACPI FFH MWAIT ..."). */
	if (strcmp(name, "haltpoll") == 0 || strcmp(name, "haltpoll idle") == 0 ||
	    strstr(desc, "HLT") != NULL)
		return STATE_HALT;
	return STATE_OTHER;
}

bool irq_row_add(const char *text, const char *label, unsigned ncpus, uint64_t *out)
{
	size_t llen = strlen(label);

	for (const char *line = text; line && *line;) {
		const char *p = line + strspn(line, " ");
		const char *next = strchr(line, '\n');

		if (strncmp(p, label, llen) == 0 && p[llen] == ':') {
			p += llen + 1;
			for (unsigned c = 0; c < ncpus; c++) {
				char *end;
				unsigned long long v;

				p += strspn(p, " ");
				if (*p < '0' || *p > '9')
					return false;
				v = strtoull(p, &end, 10);
				out[c] += v;
				p = end;
			}
			return true;
		}
		line = next ? next + 1 : NULL;
	}
	return false;
}

bool read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (len == 0)
		return false;
	buf[0] = '\0';
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return true;
}

static bool read_u64(const char *path, uint64_t *v)
{
	char buf[32], *end;

	if (!read_text(path, buf, sizeof(buf)) || buf[0] == '\0')
		return false;
	*v = strtoull(buf, &end, 10);
	return *end == '\0';
}

void idle_layout_read(struct idle_layout *l, unsigned ncpus)
{
	char path[128], desc[64];

	memset(l, 0, sizeof(*l));
	l->ncpus = ncpus;
	if (!read_text(SYS_CPU "/cpuidle/current_driver", l->driver, sizeof(l->driver)) ||
	    l->driver[0] == '\0')
		snprintf(l->driver, sizeof(l->driver), "none");
	if (!read_text(SYS_CPU "/cpuidle/current_governor_ro", l->governor, sizeof(l->governor)) ||
	    l->governor[0] == '\0')
		snprintf(l->governor, sizeof(l->governor), "none");
	if (strcmp(l->driver, "none") == 0)
		return;
	for (unsigned k = 0; k < LG_MAX_STATES; k++) {
		snprintf(path, sizeof(path), SYS_CPU "/cpu0/cpuidle/state%u/name", k);
		if (!read_text(path, l->name[k], sizeof(l->name[k])))
			break;
		snprintf(path, sizeof(path), SYS_CPU "/cpu0/cpuidle/state%u/desc", k);
		if (!read_text(path, desc, sizeof(desc)))
			desc[0] = '\0';
		l->kind[k] = idle_kind_of(l->name[k], desc);
		l->nstates = k + 1;
	}
}

bool idle_snapshot(const struct idle_layout *l, struct idle_snap *s, char *why, size_t whylen)
{
	static char irqs[65536];
	char path[128];
	int fd;
	ssize_t n = 0, got;

	memset(s, 0, sizeof(*s));
	for (unsigned c = 0; c < l->ncpus; c++)
		for (unsigned k = 0; k < l->nstates; k++) {
			snprintf(path, sizeof(path), SYS_CPU "/cpu%u/cpuidle/state%u/usage", c, k);
			if (!read_u64(path, &s->usage[c][k]))
				goto fail;
			snprintf(path, sizeof(path), SYS_CPU "/cpu%u/cpuidle/state%u/time", c, k);
			if (!read_u64(path, &s->time_us[c][k]))
				goto fail;
		}
	fd = open("/proc/interrupts", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (n < (ssize_t)sizeof(irqs) - 1 &&
		       (got = read(fd, irqs + n, sizeof(irqs) - 1 - (size_t)n)) > 0)
			n += got;
		close(fd);
		irqs[n] = '\0';
		s->have_irqs = irq_row_add(irqs, "RES", l->ncpus, s->ipi) &&
			       irq_row_add(irqs, "CAL", l->ncpus, s->ipi) &&
			       irq_row_add(irqs, "LOC", l->ncpus, s->timer);
	}
	return true;
fail:
	snprintf(why, whylen, "cannot read %s", path);
	return false;
}
