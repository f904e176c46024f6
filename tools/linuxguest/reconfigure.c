/*
 * Nothing is printed while the CPUs are held: under the nested host each character is a VM
 * exit paid while every vCPU spins. The line is kept and printed once they run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/linuxguest/cpuidle.h"
#include "tools/linuxguest/out.h"
#include "tools/linuxguest/reconfigure.h"
#include "tools/linuxguest/switchable.h"

#define HALTPOLL_PARAMS "/sys/module/haltpoll/parameters/"

static char pending[LG_SETTINGS_MAX];
static unsigned pending_window;

static __attribute__((noreturn)) void refuse(unsigned window, const char *msg, enum exit_code code)
{
	out_line("@idlelab error what=settings window=%u msg=\"%s\"", window, msg);
	out_exit(code);
}

/* Writes one parameter and reads it back, so the settings record says what Linux holds; on
 * failure, why into why. */
static bool write_param(const char *param, const char *text, char *why, size_t whylen,
			enum exit_code *code)
{
	char path[128], back[32] = "";
	size_t len = strlen(text);
	int fd;
	ssize_t w;

	snprintf(path, sizeof(path), HALTPOLL_PARAMS "%s", param);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		*code = errno == ENOENT ? EXIT_BAD_KNOB : EXIT_TEST_FAILED;
		snprintf(why, whylen,
			 errno == ENOENT ? "haltpoll.%s: this kernel has no haltpoll governor "
					   "(no %s)"
					 : "haltpoll.%s: cannot open %s",
			 param, path);
		return false;
	}
	w = write(fd, text, len);
	close(fd);
	if (w != (ssize_t)len || !read_text(path, back, sizeof(back)) || strcmp(back, text) != 0) {
		*code = EXIT_TEST_FAILED;
		snprintf(why, whylen, "haltpoll.%s: writing %s to %s failed (it holds %s)", param,
			 text, path, back[0] ? back : "nothing readable");
		return false;
	}
	return true;
}

void reconfigure_apply(const char *line, unsigned window)
{
	struct knob_values vals;
	char err[KNOB_ERR_MAX], text[32];
	enum exit_code code;

	if (linuxguest_parse_switch(line, &vals, err, sizeof(err)) != KNOB_OK)
		refuse(window, err, EXIT_BAD_KNOB);
	for (size_t i = 0; i < linuxguest_nhaltpoll_params; i++) {
		const struct lg_param *p = &linuxguest_haltpoll_params[i];

		if (!vals.given[p->knob])
			continue;
		linuxguest_param_text(p->knob, vals.v[p->knob], text, sizeof(text));
		if (!write_param(p->param, text, err, sizeof(err), &code))
			refuse(window, err, code);
	}
	snprintf(pending, sizeof(pending), "%s", line);
	pending_window = window;
}

bool reconfigure_print(unsigned window)
{
	if (!pending[0] || pending_window != window)
		return false;
	out_line("@idlelab settings window=%u %s", window, pending);
	pending[0] = '\0';
	return true;
}
