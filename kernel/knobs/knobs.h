/*
 * Boot-time knobs: the command-line parser and the printers for `help`, the docs' tables and
 * the `@idlelab config` line, all driven by the single table in kernel/knobs/knob_table.h. Pure
 * code (no hardware, no allocation) so the host unit tests and fuzzer run what the kernel
 * runs.
 */
#ifndef IDLELAB_KERNEL_KNOBS_H
#define IDLELAB_KERNEL_KNOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/knobs/knob_table.h"

/*
 * The unit tests and the fuzzer define KNOB_LIST before including the files of kernel/knobs
 * to add knobs that reach int64 edges no real knob has; everything else sees the real table.
 */
#ifndef KNOB_LIST
#define KNOB_LIST KNOB_TABLE
#endif

enum knob_type {
	KNOB_T_BOOL,
	KNOB_T_INT,
	KNOB_T_MASK, /* an INT read and written as a bit mask */
	KNOB_T_TIME,
	KNOB_T_ENUM,
};

/* KNOB_<ident> for every knob, in table order. */
#define KNOB__ID(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_) KNOB_##id_,
enum knob_id {
	KNOB_LIST(KNOB__ID) KNOB__COUNT
};

/* KNOB_NCHOICES_<ident>: how many choices an ENUM knob has (0 for other types). */
#define KNOB__PLUS_ONE(constant, name) +1
#define KNOB__NCHOICES(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_)                                     \
	KNOB_NCHOICES_##id_ = 0 ch_(KNOB__PLUS_ONE),
enum {
	KNOB_LIST(KNOB__NCHOICES)
};

/* KNOB__IF_ENUM_<TYPE>(yes, no): generate something for ENUM knobs only. */
#define KNOB__IF_ENUM_BOOL(yes, no) no
#define KNOB__IF_ENUM_INT(yes, no)  no
#define KNOB__IF_ENUM_MASK(yes, no) no
#define KNOB__IF_ENUM_TIME(yes, no) no
#define KNOB__IF_ENUM_ENUM(yes, no) yes

/* enum knob_choice_<ident> { CONSTANT, ... } for every ENUM knob, from its choice list. */
#define KNOB__CHOICE_CONST(constant, name) constant,
#define KNOB__CHOICE_ENUM(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_)                                  \
	KNOB__IF_ENUM_##ty_(enum knob_choice_##id_{ch_(KNOB__CHOICE_CONST)};, )
KNOB_LIST(KNOB__CHOICE_ENUM)

/* An err buffer this big always holds knobs_parse()'s whole message. */
#define KNOB_ERR_MAX 256

/* knobs_parse() results: 0 or one distinct negative value per kind of mistake. */
enum {
	KNOB_OK = 0,
	KNOB_E_UNKNOWN = -1,   /* no knob has that name */
	KNOB_E_VALUE = -2,     /* the value is not of the knob's type (syntax, enum name) */
	KNOB_E_RANGE = -3,     /* well-formed but outside [min, max], including int64 overflow */
	KNOB_E_MISSING = -4,   /* `name` or `name=` for a knob that needs a value */
	KNOB_E_DUPLICATE = -5, /* the same knob given twice */
	KNOB_E_SYNTAX = -6,    /* a token that is not name[=value], e.g. `=5` */
};

struct knob_def {
	const char *name;	    /* as typed on the command line */
	enum knob_type type;	    /* how the value is parsed and printed */
	int64_t def;		    /* TIME in ns, ENUM as choice index */
	int64_t min;		    /* inclusive; ENUM: 0 */
	int64_t max;		    /* inclusive; ENUM: nchoices - 1 */
	const char *const *choices; /* ENUM: nchoices names, index = value; NULL otherwise */
	unsigned nchoices;	    /* 0 unless ENUM */
	const char *help;	    /* one line */
};

extern const struct knob_def knob_defs[KNOB__COUNT];

/* given[i] says the command line set knob i (even to its default). */
struct knob_values {
	int64_t v[KNOB__COUNT];
	bool given[KNOB__COUNT];
};

/* The kernel's live values: defaults until boot code parses the command line into it. */
extern struct knob_values knobs;

static inline int64_t knob(enum knob_id id)
{
	return knobs.v[id];
}

static inline bool knob_given(enum knob_id id)
{
	return knobs.given[id];
}

/* Called with each output line, without a trailing newline. */
typedef void knob_emit_fn(const char *line, void *ctx);

void knobs_set_defaults(struct knob_values *vals);

/*
 * Parses a command line of space/tab separated `name=value` tokens (a bare `name` sets a
 * BOOL to 1). On success fills *out (defaults for knobs not given), clears err and returns
 * KNOB_OK. On failure sets *out to the defaults, writes one line naming the bad token and
 * what is accepted into err (truncated to errlen; err may be NULL) and returns KNOB_E_*.
 * cmdline NULL is taken as empty.
 */
int knobs_parse(const char *cmdline, struct knob_values *out, char *err, size_t errlen);

/*
 * Canonical text of value v for knob id, which knobs_parse accepts back: the choice name
 * for ENUM, 0/1 for BOOL, decimal for INT, 0x hex for MASK, TIME in its largest exact unit
 * (250us, 5s, 1500ns). Returns the full length like snprintf (the text is truncated to len),
 * or -1 for an invalid id.
 */
int knob_format_value(enum knob_id id, int64_t v, char *buf, size_t len);

/* One aligned line per knob: name, type, default, range or choices, help. */
void knobs_print_help(knob_emit_fn *emit, void *ctx);

#ifdef IDLELAB_HOST
/* The docs' table (docs/knobs.md, tools/knobdoc): | knob | type | default | range |
 * description |, then a syntax note. */
void knobs_print_markdown(knob_emit_fn *emit, void *ctx);
#endif

/* `@idlelab config name=value ...` for the live `knobs`, split into lines of <= 900 chars. */
void knobs_print_config(knob_emit_fn *emit, void *ctx);

/* As knobs_print_config, for any values and line limit (a single pair may exceed it). */
void knobs_print_values(const struct knob_values *vals, size_t max_line, knob_emit_fn *emit,
			void *ctx);

#endif
