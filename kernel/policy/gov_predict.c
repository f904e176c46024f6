/*
 * The "predict" governor's table. Its rule and its functions are in gov_predict.h.
 */
#include "kernel/policy/gov_predict.h"

static void predict_enable(struct gov_cpu *g)
{
	hp_enable(g);
	g->predict = (struct predict_cpu){0};
	g->takeovers = 0;
}

uint64_t predict_margin(const struct predict_cpu *p, const struct gov_params *hp)
{
	return pr_margin(p, hp);
}

const struct idle_governor gov_predict = {
    .name = "predict",
    .enable = predict_enable,
    .select = pr_select,
    .halt_limit = pr_halt_limit,
    .poll_begin = pr_poll_begin,
    .poll_limit = pr_poll_limit,
    .reflect = pr_reflect,
    .aborted = pr_aborted,
    .window_ns = pr_window_ns,
};
