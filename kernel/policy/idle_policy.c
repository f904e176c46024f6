#include "kernel/policy/idle_policy.h"

int idle_policy_choose(int knob_idle, const struct idle_env *env, const char **reason)
{
	if (knob_idle != IDLE_AUTO) {
		*reason = "knob";
		return knob_idle;
	}
	if (!env->kvm) {
		*reason = "not_kvm";
		return IDLE_HALT;
	}
	if (env->realtime_hint) {
		*reason = "realtime_hint";
		return IDLE_HALTPOLL;
	}
	if (env->force) {
		*reason = "forced";
		return IDLE_HALTPOLL;
	}
	*reason = "no_realtime_hint";
	return IDLE_HALT;
}

bool idle_policy_polls(int policy)
{
	return policy == IDLE_POLL || policy == IDLE_HALTPOLL;
}

int hostpoll_msr_value(int knob_hostpoll, int policy, const struct idle_env *env)
{
	if (!env->pollctl)
		return -1;
	if (knob_hostpoll == HOSTPOLL_ON)
		return 1;
	if (knob_hostpoll == HOSTPOLL_OFF)
		return 0;
	return idle_policy_polls(policy) ? 0 : 1;
}
