/*
 * tools/replay's exit codes (build/idlelab-replay's, and the Python front's own PNG one): one
 * definition, which tools/replay reads from here.
 */
#ifndef IDLELAB_REPLAY_EXITS_H
#define IDLELAB_REPLAY_EXITS_H

#define RP_EXIT_OK	  0 /* replayed (with --require-agree: every halt agreed) */
#define RP_EXIT_USAGE	  2 /* a bad option or value */
#define RP_EXIT_READ	  3 /* the trace cannot be read */
#define RP_EXIT_NO_EVENTS 4 /* no kvm_vcpu_wakeup, or no kvm_halt_poll_ns to synchronise by */
#define RP_EXIT_TRUNCATED 5 /* a kvm event line cut short or malformed */
#define RP_EXIT_MIXED	  6 /* two trace formats in one file */
#define RP_EXIT_DISAGREE  7 /* --require-agree and some halt did not */
#define RP_EXIT_PNG	  8 /* tools/replay: the PNG could not be made */

#endif
