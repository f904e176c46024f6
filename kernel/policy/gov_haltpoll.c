/* The haltpoll governor's table; its functions are in gov_haltpoll.h. */
#include "kernel/policy/gov_haltpoll.h"

const struct idle_governor gov_haltpoll = {
    .name = "haltpoll",
    .enable = hp_enable,
    .select = hp_select,
    .halt_limit = hp_halt_limit,
    .poll_begin = hp_poll_begin,
    .poll_limit = hp_poll_limit,
    .reflect = hp_reflect,
    .aborted = hp_aborted,
    .window_ns = hp_window_ns,
};
