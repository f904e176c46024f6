/* The haltpoll governor's table; its functions are in gov_haltpoll.h. */
#include "kernel/policy/gov_haltpoll.h"

const struct idle_governor gov_haltpoll = GOV_HALTPOLL_TABLE;
