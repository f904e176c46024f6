; safe_halt() out of line, so that its HLT has one address the interrupt entry can know
; (trap.c: an interrupt taken there was delivered inside STI's shadow, which a correct CPU
; never does, and must not return to the HLT).
bits 64
section .text
global arch_safe_halt, arch_safe_halt_hlt, arch_safe_halt_shadowless

; void arch_safe_halt(void): STI, then HLT inside its interrupt shadow. Clobbers nothing.
arch_safe_halt:
	sti
arch_safe_halt_hlt:
	hlt
	ret

; The self test's broken shadow (kernel/selftest/sched.c): an IRETQ to arch_safe_halt's HLT
; with IF set. IRET opens no interrupt shadow, so an interrupt already pending is taken on
; the HLT before it runs, as a host that drops STI's shadow across a VM exit delivers it (an
; STI and a JMP there would do on hardware, but QEMU's TCG chains the jump's block to the
; HLT's without looking at interrupts). The stack is as on entry, so the RET after the HLT
; returns to the caller. Clobbers rax and rcx.
arch_safe_halt_shadowless:
	mov rax, rsp
	mov rcx, ss
	push rcx
	push rax
	pushfq
	or qword [rsp], 0x200	; RFLAGS.IF
	mov rcx, cs
	push rcx
	lea rcx, [rel arch_safe_halt_hlt]
	push rcx
	iretq
