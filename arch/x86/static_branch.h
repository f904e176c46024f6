/*
 * A branch a hot path takes only when a run asks for it (timeline=), and that costs the path
 * one NOP when it does not. Each site is a 5-byte NOP listed (with the label it would jump
 * to) in the section static_branch_sites; arch_static_branches_enable() turns every site
 * into a jump, once, at boot. What the jump reaches is ordinary compiled C.
 */
#ifndef IDLELAB_ARCH_STATIC_BRANCH_H
#define IDLELAB_ARCH_STATIC_BRANCH_H

/*
 * Falls through (a 5-byte NOP) until arch_static_branches_enable(), then jumps to `label`, a
 * label of the enclosing function.
 */
#define arch_static_branch(label)                                                                  \
	__asm__ goto("1: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"                                   \
		     ".pushsection static_branch_sites, \"a\"\n\t"                                 \
		     ".balign 8\n\t"                                                               \
		     ".quad 1b, %l[" #label "]\n\t"                                                \
		     ".popsection"                                                                 \
		     :                                                                             \
		     :                                                                             \
		     :                                                                             \
		     : label)

/*
 * Turns every arch_static_branch() site into a jump. Code is patched while it may not run:
 * call it once, on the boot CPU, before any other CPU starts and before any site can run.
 */
void arch_static_branches_enable(void);

#endif
