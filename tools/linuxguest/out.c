#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/io.h>
#include <sys/reboot.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tools/linuxguest/out.h"

#define DEBUG_EXIT_PORT 0xf4

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void out_line(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	for (int off = 0; off < n;) {
		ssize_t w = write(STDOUT_FILENO, line + off, (size_t)(n - off));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (int)w;
	}
}

int text_append(char *buf, size_t size, int n, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (n < 0 || (size_t)n >= size)
		return size ? (int)size - 1 : 0;
	va_start(ap, fmt);
	w = vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	va_end(ap);
	if (w < 0)
		return n;
	return (size_t)n + (size_t)w >= size ? (int)size - 1 : n + w;
}

bool console_raw(void)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &t) != 0)
		return false;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ECHONL | ISIG | IEXTEN);
	t.c_iflag &= ~(tcflag_t)(IXON | IXOFF | ICRNL | INLCR | IGNCR | ISTRIP | BRKINT);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	return tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
}

void console_flush_input(void)
{
	tcflush(STDIN_FILENO, TCIFLUSH);
}

void ack_start(struct ack_line *a)
{
	a->n = 0;
	a->text[0] = '\0';
}

enum ack_state ack_feed(struct ack_line *a, char ch)
{
	if (ch == '\n' || (a->n == 0 && ch != '\r' && (unsigned char)ch < ' '))
		return ACK_DONE;
	if (ch == '\r')
		return ACK_MORE;
	if (a->n + 1 >= sizeof(a->text))
		return ACK_TOO_LONG;
	a->text[a->n++] = ch;
	a->text[a->n] = '\0';
	return ACK_MORE;
}

const char *console_wait_ack(uint64_t timeout_ns, struct ack_line *a)
{
	uint64_t end = now_ns() + timeout_ns;
	char c;

	ack_start(a);
	for (;;) {
		uint64_t now = now_ns();
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		int ms, rc;

		if (now >= end)
			return "no acknowledgement from the host";
		ms = (int)((end - now + 999999) / 1000000);
		rc = poll(&p, 1, ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return "the console cannot be read";
		if (rc == 0 || read(STDIN_FILENO, &c, 1) != 1)
			continue;
		switch (ack_feed(a, c)) {
		case ACK_DONE:
			return NULL;
		case ACK_TOO_LONG:
			return "a settings line from the host longer than LG_SETTINGS_MAX";
		case ACK_MORE:
			break;
		}
	}
}

static const char *exit_name(enum exit_code code)
{
	switch (code) {
#define X(name, value, help)                                                                       \
	case EXIT_##name:                                                                          \
		return #name;
		EXIT_CODE_LIST(X)
#undef X
	}
	return "UNKNOWN";
}

void out_exit(enum exit_code code)
{
	out_line("@idlelab exit code=0x%x name=%s cpu=%d", (unsigned)code, exit_name(code),
		 sched_getcpu());
	tcdrain(STDOUT_FILENO);
	/* isa-debug-exit (qemu.py adds it) ends QEMU with the code, as idlelab's kernel does;
	 * without the device the write is ignored and the guest powers off instead. */
	if (ioperm(DEBUG_EXIT_PORT, 4, 1) == 0)
		outl((unsigned)code, DEBUG_EXIT_PORT);
	sync();
	reboot(RB_POWER_OFF);
	_exit(1);
}
