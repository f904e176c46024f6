/*
 * A branch a hot path takes only when a run asks for it (a knob read once at boot), and that
 * costs the path one NOP when it does not. Each site is a 5-byte NOP listed (with the label it
 * would jump to and the number of the switch it belongs to) in the section
 * static_branch_sites; arch_static_branches_set(key, on) turns that switch's sites into jumps
 * at boot (and, between windows, back or again: kernel/reconfigure.c). What the jump reaches is ordinary compiled C. The switches are numbered by
 * their user (kernel/static_branch.h).
 */
#ifndef IDLELAB_ARCH_STATIC_BRANCH_H
#define IDLELAB_ARCH_STATIC_BRANCH_H

/*
 * Falls through (a 5-byte NOP) until arch_static_branches_set(key, true), then jumps to `label`,
 * a label of the enclosing function. key: a constant.
 */
#define arch_static_branch(key, label)                                                             \
	__asm__ goto("1: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"                                   \
		     ".pushsection static_branch_sites, \"a\"\n\t"                                 \
		     ".balign 8\n\t"                                                               \
		     ".quad 1b, %l[" #label "], %c0\n\t"                                           \
		     ".popsection"                                                                 \
		     :                                                                             \
		     : "i"(key)                                                                    \
		     :                                                                             \
		     : label)

#include <stdbool.h>

/*
 * Turns every arch_static_branch(key, ...) site into a jump (on) or back into its NOP. Code is
 * patched while no other CPU can be at a site: on the boot CPU before the others start, or
 * with every other CPU parked in kernel/quiesce.c's barrier (each site is one instruction, so
 * a parked CPU is before or after it, and its IRET from the barrier serializes).
 */
void arch_static_branches_set(unsigned key, bool on);

#endif
