/* The governor registry: each governor's table, one slot per cpuidle.governor= choice, in
 * the knob's order. */
#include "kernel/policy/governors.h"
#include "kernel/knobs/knobs.h"
#include "kernel/policy/haltpoll.h"
#include "kernel/policy/predict.h"

const struct idle_governor gov_haltpoll = HALTPOLL_GOVERNOR;
const struct idle_governor gov_predict = PREDICT_GOVERNOR;

const struct idle_governor *const idle_governors[] = {
    [GOVERNOR_HALTPOLL] = &gov_haltpoll,
    [GOVERNOR_PREDICT] = &gov_predict,
};
const unsigned idle_governors_count = sizeof(idle_governors) / sizeof(idle_governors[0]);

_Static_assert(sizeof(idle_governors) / sizeof(idle_governors[0]) == KNOB_NCHOICES_governor,
	       "idle_governors[] must have a slot for every cpuidle.governor= choice");
