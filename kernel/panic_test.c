/* The panic_test knob: raises the CPU exception it names, to test the exception dump. */
#include "arch/x86/fault.h"
#include "kernel/panic_test.h"
#include "kernel/knobs/knobs.h"

void panic_test_run(int which)
{
	switch (which) {
	case PANIC_TEST_UD:
		fault_invalid_opcode();
		break;
	case PANIC_TEST_DE:
		fault_divide_error();
		break;
	case PANIC_TEST_PF:
		fault_page_fault();
		break;
	case PANIC_TEST_GP:
		fault_general_protection();
		break;
	case PANIC_TEST_NULL:
		fault_null_dereference();
		break;
	}
}
