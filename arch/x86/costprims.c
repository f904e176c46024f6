/*
 * cost_call_batch()'s callee (costprims.h): a function that only returns. Written in asm so
 * that no compiler option ever gives it a prologue: what bench=exits' `call` times is the
 * CALL and the RET alone.
 */
#include "arch/x86/costprims.h"

__asm__(".text\n"
	".globl cost_ret_stub\n"
	".type cost_ret_stub, @function\n"
	"cost_ret_stub:\n"
	"\tret\n"
	".size cost_ret_stub, .-cost_ret_stub\n");
