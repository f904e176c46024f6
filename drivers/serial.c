/*
 * 16550 UART on COM1. Under this project's emulated KVM every port access costs tens of
 * microseconds, so we wait for an empty transmitter once and then fill the whole 16-byte
 * FIFO, instead of polling the line status before every byte.
 */
#include "arch/x86/cpu.h"
#include "drivers/serial.h"

#define COM1	  0x3f8
#define REG_DATA  0
#define REG_IER	  1
#define REG_FCR	  2
#define REG_LCR	  3
#define REG_MCR	  4
#define REG_LSR	  5
#define LSR_DR	  0x01
#define LSR_THRE  0x20
#define FIFO_SIZE 16

void serial_init(void)
{
	outb(COM1 + REG_IER, 0x00);  /* no UART interrupts: we poll */
	outb(COM1 + REG_LCR, 0x80);  /* DLAB to set the divisor */
	outb(COM1 + REG_DATA, 0x01); /* 115200 baud */
	outb(COM1 + REG_IER, 0x00);
	outb(COM1 + REG_LCR, 0x03); /* 8N1 */
	outb(COM1 + REG_FCR, 0xc7); /* FIFO on, cleared */
	outb(COM1 + REG_MCR, 0x03); /* DTR, RTS */
}

static void wait_fifo_empty(void)
{
	while (!(inb(COM1 + REG_LSR) & LSR_THRE))
		cpu_relax();
}

/* One byte into the FIFO; *room: the bytes it still takes since it was last seen empty. */
static void put(unsigned char c, size_t *room)
{
	if (!*room) {
		wait_fifo_empty();
		*room = FIFO_SIZE;
	}
	outb(COM1 + REG_DATA, c);
	(*room)--;
}

void serial_write(const char *s, size_t n)
{
	size_t room = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			put('\r', &room);
		put((unsigned char)s[i], &room);
	}
}

int serial_try_read(void)
{
	if (!(inb(COM1 + REG_LSR) & LSR_DR))
		return -1;
	return inb(COM1 + REG_DATA);
}
