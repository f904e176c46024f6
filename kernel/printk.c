#include <stdarg.h>
#include <stdbool.h>

#include "drivers/debug_exit.h"
#include "drivers/serial.h"
#include "kernel/exit_codes.h"
#include "kernel/knobs/knobs.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/spinlock.h"
#include "kernel/spool.h"
#include "lib/format.h"

#define LINE_MAX 1024
#define NO_OWNER 0xffffffffu

static struct spinlock console_lock;
/* The CPU inside printk, so an exception raised while it prints can still dump. */
static uint32_t console_owner = NO_OWNER;

/* Under the console lock: a line goes to the open spool batch if it fits; one that does not
 * ends the batch (its pointer line first, so the console keeps the lines' order). */
static void console_write(const char *line, size_t n)
{
	char pointer[SPOOL_LINE_MAX];
	size_t len;

	if (spool_put(line, n))
		return;
	len = spool_close(pointer);
	if (len)
		serial_write(pointer, len);
	serial_write(line, n);
}

static uint64_t console_lock_unless_nested(bool *nested)
{
	uint32_t me = this_cpu()->id;

	*nested = __atomic_load_n(&console_owner, __ATOMIC_RELAXED) == me;
	if (*nested)
		return 0;
	uint64_t flags = spin_lock_irqsave(&console_lock);
	__atomic_store_n(&console_owner, me, __ATOMIC_RELAXED);
	return flags;
}

static void console_unlock_unless_nested(bool nested, uint64_t flags)
{
	if (nested)
		return;
	__atomic_store_n(&console_owner, NO_OWNER, __ATOMIC_RELAXED);
	spin_unlock_irqrestore(&console_lock, flags);
}

static void vprintk(const char *fmt, va_list ap)
{
	char line[LINE_MAX];
	bool nested;
	uint64_t flags;
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);

	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	if (n == 0 || line[n - 1] != '\n')
		line[n++] = '\n';
	flags = console_lock_unless_nested(&nested);
	/* A line printed while this CPU prints (an exception's dump) skips the spool: it may be
	 * the last thing the host sees. */
	if (nested)
		serial_write(line, (size_t)n);
	else
		console_write(line, (size_t)n);
	console_unlock_unless_nested(nested, flags);
}

void console_spool_begin(void)
{
	bool nested;
	uint64_t flags;

	if (!knob(KNOB_record_spool))
		return;
	flags = console_lock_unless_nested(&nested);
	spool_open();
	console_unlock_unless_nested(nested, flags);
}

void console_spool_end(void)
{
	char pointer[SPOOL_LINE_MAX];
	bool nested;
	uint64_t flags = console_lock_unless_nested(&nested);
	size_t len = spool_close(pointer);

	if (len)
		serial_write(pointer, len);
	console_unlock_unless_nested(nested, flags);
}

void console_spool_rewind(void)
{
	bool nested;
	uint64_t flags = console_lock_unless_nested(&nested);

	spool_rewind();
	console_unlock_unless_nested(nested, flags);
}

void printk(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintk(fmt, ap);
	va_end(ap);
}

static const char *exit_name(uint8_t code)
{
	switch (code) {
#define X(name, value, help)                                                                       \
	case value:                                                                                \
		return #name;
		EXIT_CODE_LIST(X)
#undef X
	}
	return "UNKNOWN";
}

void kernel_exit(uint8_t code)
{
	console_spool_end(); /* a batch cut short by the exit still reaches the host */
	printk("@idlelab exit code=0x%x name=%s cpu=%u", code, exit_name(code), this_cpu()->id);
	debug_exit(code);
}

void panic(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printk("@idlelab panic cpu=%u msg=\"%s\"", this_cpu()->id, msg);
	kernel_exit(EXIT_PANIC);
}
