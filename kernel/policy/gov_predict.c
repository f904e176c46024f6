/*
 * The "predict" governor's table. Its rule and its functions are in gov_predict.h.
 */
#include "kernel/policy/gov_predict.h"

uint64_t predict_margin(const struct predict_cpu *p, const struct gov_params *hp)
{
	return pr_margin(p, hp);
}

const struct idle_governor gov_predict = GOV_PREDICT_TABLE;
