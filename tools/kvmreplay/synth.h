/*
 * --synthesize VCPUS,SECONDS,SEED: a tracefs-format trace of VCPUS vCPU threads halting for
 * SECONDS under the given parameters, made by the transcription itself: the benchmark's input
 * (make bench-replay) and a trace with every branch of kvm_vcpu_halt in it for the tests.
 */
#ifndef IDLELAB_REPLAY_SYNTH_H
#define IDLELAB_REPLAY_SYNTH_H

#include <stdio.h>

#include "tools/sim/host_poll.h"

int rp_synthesize(const char *spec, const struct hp_params *p, FILE *out);

#endif
