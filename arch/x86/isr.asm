; One entry stub per vector. Each pushes a dummy error code where the CPU pushes none, then
; the vector, so every trap reaches trap_dispatch() with the same frame (struct trap_frame).
bits 64
section .text
extern trap_dispatch

%macro STUB 1
isr_%1:
%if %1 == 8 || (%1 >= 10 && %1 <= 14) || %1 == 17 || %1 == 21 || %1 == 29 || %1 == 30
%else
	push 0
%endif
	push %1
	jmp isr_common
%endmacro

%assign v 0
%rep 256
STUB v
%assign v v + 1
%endrep

; The CPU aligns RSP to 16 before pushing its 5-word frame; with the 2 words above and the
; 15 registers here RSP is 16-aligned again at the call, as the ABI wants.
isr_common:
	push rax
	push rbx
	push rcx
	push rdx
	push rsi
	push rdi
	push rbp
	push r8
	push r9
	push r10
	push r11
	push r12
	push r13
	push r14
	push r15
	cld
	mov rdi, rsp
	call trap_dispatch
	pop r15
	pop r14
	pop r13
	pop r12
	pop r11
	pop r10
	pop r9
	pop r8
	pop rbp
	pop rdi
	pop rsi
	pop rdx
	pop rcx
	pop rbx
	pop rax
	add rsp, 16
	iretq

section .rodata
align 8
global isr_table
isr_table:
%assign v 0
%rep 256
	dq isr_ %+ v
%assign v v + 1
%endrep
