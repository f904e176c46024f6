; Thread context switch. Only callee-saved registers need saving: the switch is an ordinary
; call as far as the compiler knows. Entered with interrupts off; the resumed thread
; restores its own interrupt state afterwards.
bits 64
section .text
global arch_switch, arch_thread_entry
extern sched_thread_start

; void arch_switch(uint64_t *save_rsp, uint64_t next_rsp)
arch_switch:
	push rbp
	push rbx
	push r12
	push r13
	push r14
	push r15
	mov [rdi], rsp
	mov rsp, rsi
	pop r15
	pop r14
	pop r13
	pop r12
	pop rbx
	pop rbp
	ret

; First "return" of a new thread (see arch_thread_stack_init): r12 holds the thread.
arch_thread_entry:
	and rsp, -16
	mov rdi, r12
	call sched_thread_start
	ud2
