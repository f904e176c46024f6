/*
 * A branch a hot path takes only when a run asks for it (a knob read once at boot), and that
 * costs the path one NOP when it does not. Each site is a 5-byte NOP listed (with the label it
 * would jump to and the number of the switch it belongs to) in the section
 * static_branch_sites; arch_static_branches_enable(key) turns that switch's sites into jumps,
 * once, at boot. What the jump reaches is ordinary compiled C. The switches are numbered by
 * their user (kernel/static_branch.h).
 */
#ifndef IDLELAB_ARCH_STATIC_BRANCH_H
#define IDLELAB_ARCH_STATIC_BRANCH_H

/*
 * Falls through (a 5-byte NOP) until arch_static_branches_enable(key), then jumps to `label`,
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

/*
 * Turns every arch_static_branch(key, ...) site into a jump. Code is patched while it may not
 * run: call it at most once per key, on the boot CPU, before any other CPU starts and before
 * any of the key's sites can run.
 */
void arch_static_branches_enable(unsigned key);

#endif
