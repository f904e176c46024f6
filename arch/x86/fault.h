/*
 * Deliberate CPU exceptions, for testing the exception dump. Not int3 or int $n: this
 * project's emulated KVM stops the VM on those in ring 0 instead of delivering them.
 */
#ifndef IDLELAB_ARCH_FAULT_H
#define IDLELAB_ARCH_FAULT_H

void fault_invalid_opcode(void);
void fault_divide_error(void);
void fault_page_fault(void);
void fault_general_protection(void);
/* Reads FAULT_NULL_OFFSET bytes past address 0, as a member of a null struct pointer. */
#define FAULT_NULL_OFFSET 0x18
void fault_null_dereference(void);

#endif
