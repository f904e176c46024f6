; The stub behind arch_cold_call3() (arch/x86/coldcall.h): calls the C function in r11 with
; its arguments in rdi, rsi, rdx, and returns with every register and the flags as they were,
; so the call site need not treat any register as clobbered. Kernel code has no red zone
; (-mno-red-zone), so the call's push cannot overwrite anything the caller keeps below rsp.
bits 64
section .text
global arch_cold_call

arch_cold_call:
	pushfq
	push rax
	push rcx
	push rdx
	push rsi
	push rdi
	push r8
	push r9
	push r10
	push r11
	push rbp
	mov rbp, rsp
	and rsp, -16		; the C ABI's alignment at a call; the caller's is unknown
	call r11
	mov rsp, rbp
	pop rbp
	pop r11
	pop r10
	pop r9
	pop r8
	pop rdi
	pop rsi
	pop rdx
	pop rcx
	pop rax
	popfq
	ret
