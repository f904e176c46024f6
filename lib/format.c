/*
 * A small vsnprintf: enough for console lines and @idlelab records. No floating point (the
 * kernel is built without SSE), so callers print fixed-point numbers themselves.
 */
#include <stdbool.h>
#include <stdint.h>

#include "lib/format.h"

struct out {
	char *buf;
	size_t size;
	size_t len; /* characters the full result needs, even past size */
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void pad(struct out *o, char c, int n)
{
	while (n-- > 0)
		put(o, c);
}

struct spec {
	bool left;
	bool zero;
	int width;
	int length; /* 0 int, 1 long, 2 long long, 3 size_t */
};

static void put_str(struct out *o, const struct spec *sp, const char *s)
{
	int n = 0;

	if (!s)
		s = "(null)";
	while (s[n])
		n++;
	if (!sp->left)
		pad(o, ' ', sp->width - n);
	while (*s)
		put(o, *s++);
	if (sp->left)
		pad(o, ' ', sp->width - n);
}

static void put_num(struct out *o, const struct spec *sp, uint64_t v, bool neg, unsigned base,
		    bool upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0, len;

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	len = n + (neg ? 1 : 0);
	if (!sp->left && !sp->zero)
		pad(o, ' ', sp->width - len);
	if (neg)
		put(o, '-');
	if (!sp->left && sp->zero)
		pad(o, '0', sp->width - len);
	while (n)
		put(o, tmp[--n]);
	if (sp->left)
		pad(o, ' ', sp->width - len);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const char *parse_spec(const char *f, struct spec *sp)
{
	*sp = (struct spec){0};
	while (*f == '-' || *f == '0') {
		if (*f == '-')
			sp->left = true;
		else
			sp->zero = true;
		f++;
	}
	while (is_digit(*f))
		sp->width = sp->width * 10 + (*f++ - '0');
	if (*f == 'z') {
		sp->length = 3;
		f++;
	}
	while (*f == 'l') {
		sp->length++;
		f++;
	}
	return f;
}

static int64_t arg_signed(va_list *ap, int length)
{
	if (length == 0)
		return va_arg(*ap, int);
	return va_arg(*ap, int64_t);
}

static uint64_t arg_unsigned(va_list *ap, int length)
{
	if (length == 0)
		return va_arg(*ap, unsigned int);
	return va_arg(*ap, uint64_t);
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = {buf, size, 0};
	struct spec sp;
	va_list args;

	va_copy(args, ap);
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt = parse_spec(fmt + 1, &sp);
		switch (*fmt) {
		case 'd':
		case 'i': {
			int64_t v = arg_signed(&args, sp.length);
			put_num(&o, &sp, v < 0 ? -(uint64_t)v : (uint64_t)v, v < 0, 10, false);
			break;
		}
		case 'u':
			put_num(&o, &sp, arg_unsigned(&args, sp.length), false, 10, false);
			break;
		case 'x':
		case 'X':
			put_num(&o, &sp, arg_unsigned(&args, sp.length), false, 16, *fmt == 'X');
			break;
		case 'o':
			put_num(&o, &sp, arg_unsigned(&args, sp.length), false, 8, false);
			break;
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, &sp, (uintptr_t)va_arg(args, void *), false, 16, false);
			break;
		case 'c':
			put(&o, (char)va_arg(args, int));
			break;
		case 's':
			put_str(&o, &sp, va_arg(args, const char *));
			break;
		case '%':
			put(&o, '%');
			break;
		default: /* unknown conversion: show it rather than guess */
			put(&o, '%');
			if (!*fmt)
				goto done;
			put(&o, *fmt);
		}
	}
done:
	va_end(args);
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
