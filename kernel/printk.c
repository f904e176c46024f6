#include <stdarg.h>
#include <stdbool.h>

#include "drivers/debug_exit.h"
#include "drivers/serial.h"
#include "kernel/exit_codes.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/spinlock.h"
#include "lib/format.h"

#define LINE_MAX 1024
#define NO_OWNER 0xffffffffu

static struct spinlock console_lock;
/* The CPU inside printk, so an exception raised while it prints can still dump. */
static uint32_t console_owner = NO_OWNER;

static void vprintk(const char *fmt, va_list ap)
{
	char line[LINE_MAX];
	uint32_t me = this_cpu()->id;
	bool nested = __atomic_load_n(&console_owner, __ATOMIC_RELAXED) == me;
	uint64_t flags = 0;
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);

	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	if (n == 0 || line[n - 1] != '\n')
		line[n++] = '\n';
	if (!nested) {
		flags = spin_lock_irqsave(&console_lock);
		__atomic_store_n(&console_owner, me, __ATOMIC_RELAXED);
	}
	serial_write(line, (size_t)n);
	if (!nested) {
		__atomic_store_n(&console_owner, NO_OWNER, __ATOMIC_RELAXED);
		spin_unlock_irqrestore(&console_lock, flags);
	}
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
