/*
 * The knob tables, generated from kernel/knobs/knob_table.h and checked at compile time, so
 * a bad table never boots; the live values and the defaults.
 */
#include "kernel/knobs/knob_text.h"

/* The choice strings of every ENUM knob: knob_choices_<ident>[], indexed by value. */
#define KNOB__CHOICE_NAME(constant, name) name,
#define KNOB__CHOICE_ARRAY(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_)                                 \
	KNOB__IF_ENUM_##ty_(                                                                       \
	    static const char *const knob_choices_##id_[] = {ch_(KNOB__CHOICE_NAME)};, )
KNOB_LIST(KNOB__CHOICE_ARRAY)

/* Compile-time checks of every entry, so a bad table never boots. */
#define KNOB__PLUS_SIZE(constant, name) +sizeof(name)
#define KNOB__CHECK_BOOL(id_, df_, lo_, hi_, ch_)                                                  \
	_Static_assert((lo_) == 0 && (hi_) == 1, "BOOL knob " #id_ ": min, max must be 0, 1");     \
	_Static_assert((df_) == 0 || (df_) == 1, "BOOL knob " #id_ ": default must be 0 or 1");
#define KNOB__CHECK_RANGE(id_, df_, lo_, hi_, ch_)                                                 \
	_Static_assert((lo_) <= (df_) && (df_) <= (hi_), "knob " #id_ ": default out of range");
#define KNOB__CHECK_INT(id_, df_, lo_, hi_, ch_) KNOB__CHECK_RANGE(id_, df_, lo_, hi_, ch_)
#define KNOB__CHECK_MASK(id_, df_, lo_, hi_, ch_)                                                  \
	KNOB__CHECK_RANGE(id_, df_, lo_, hi_, ch_)                                                 \
	_Static_assert((lo_) >= 0, "MASK knob " #id_ ": a mask has no sign, min must be >= 0");
#define KNOB__CHECK_TIME(id_, df_, lo_, hi_, ch_) KNOB__CHECK_RANGE(id_, df_, lo_, hi_, ch_)
#define KNOB__CHECK_ENUM(id_, df_, lo_, hi_, ch_)                                                  \
	_Static_assert((lo_) == 0 && (hi_) == 0, "ENUM knob " #id_ ": write 0, 0 for min, max");   \
	_Static_assert(KNOB_NCHOICES_##id_ >= 1 && KNOB_NCHOICES_##id_ <= KNOB_CHOICES_MAX,        \
		       "ENUM knob " #id_ ": 1 to 16 choices");                                     \
	_Static_assert((int64_t)(df_) >= 0 && (int64_t)(df_) < (int64_t)KNOB_NCHOICES_##id_,       \
		       "ENUM knob " #id_ ": default is not a choice");                             \
	_Static_assert(0 ch_(KNOB__PLUS_SIZE) <= KNOB_CHOICE_CHARS_MAX,                            \
		       "ENUM knob " #id_ ": choice names too long");
#define KNOB__CHECK(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_)                                        \
	_Static_assert(sizeof(nm_) > 1 && sizeof(nm_) <= KNOB_NAME_MAX,                            \
		       "knob " #id_ ": name empty or too long");                                   \
	_Static_assert(sizeof(hl_) <= KNOB_HELP_MAX, "knob " #id_ ": help text too long");         \
	KNOB__CHECK_##ty_(id_, df_, lo_, hi_, ch_)
KNOB_LIST(KNOB__CHECK)

#define KNOB__DEF(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_)                                          \
	[KNOB_##id_] = {                                                                           \
	    .name = nm_,                                                                           \
	    .type = KNOB_T_##ty_,                                                                  \
	    .def = (df_),                                                                          \
	    .min = (lo_),                                                                          \
	    .max = KNOB__IF_ENUM_##ty_(KNOB_NCHOICES_##id_ - 1, (hi_)),                            \
	    .choices = KNOB__IF_ENUM_##ty_(knob_choices_##id_, NULL),                              \
	    .nchoices = KNOB_NCHOICES_##id_,                                                       \
	    .help = hl_,                                                                           \
	},
const struct knob_def knob_defs[KNOB__COUNT] = {KNOB_LIST(KNOB__DEF)};

#define KNOB__DEFAULT(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_) [KNOB_##id_] = (df_),
struct knob_values knobs = {.v = {KNOB_LIST(KNOB__DEFAULT)}};

/*
 * One aggregate copy, not a loop over the fields: GCC 12 (-O1 and up) dropped the loop's
 * stores into knobs_parse()'s local values as dead (its mod/ref summary of the loop leaves
 * the extent of the `given` stores unknown), so a parse started from whatever the stack
 * held. A struct copy is a store the compiler tracks whole.
 */
static const struct knob_values default_values = {.v = {KNOB_LIST(KNOB__DEFAULT)}};

void knobs_set_defaults(struct knob_values *vals)
{
	*vals = default_values;
}
