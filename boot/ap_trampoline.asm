; Application-processor trampoline, assembled as a flat binary for physical address 0x8000
; (SIPI vector 0x08) and copied there by arch/x86/smp.c. It takes the AP from real mode
; through protected mode into long mode on the BSP's page tables, then calls the C entry
; with the stack and CPU index the BSP left in the parameter block. APs are started one at
; a time, so one parameter block suffices.
bits 16
org 0x8000

	jmp short start16
align 8
params:                                 ; struct ap_boot_params in arch/x86/smp.c
p_cr3:    dq 0
p_entry:  dq 0
p_stack:  dq 0
p_cpu:    dq 0
p_alive:  dq 0                          ; set by the AP on arrival, so the BSP can skip SIPI #2

start16:
	cli
	cld
	xor ax, ax
	mov ds, ax
	mov byte [p_alive], 1
	lgdt [gdt_ptr]
	mov eax, cr0
	or eax, 1
	mov cr0, eax
	jmp dword 0x08:pm32

bits 32
pm32:
	mov ax, 0x10
	mov ds, ax
	mov es, ax
	mov ss, ax
	mov eax, cr4
	or eax, 1 << 5                      ; PAE
	mov cr4, eax
	mov eax, [p_cr3]
	mov cr3, eax
	mov ecx, 0xC0000080                 ; EFER.LME
	rdmsr
	or eax, 1 << 8
	wrmsr
	mov eax, cr0
	or eax, (1 << 31) | (1 << 16) | 1
	mov cr0, eax
	jmp 0x18:lm64

bits 64
lm64:
	mov ax, 0x20
	mov ds, ax
	mov es, ax
	mov ss, ax
	mov rsp, [p_stack]
	mov rdi, [p_cpu]
	mov rax, [p_entry]
	call rax
.hang:
	cli
	hlt
	jmp .hang

align 8
gdt:
	dq 0
	dq 0x00CF9A000000FFFF               ; 0x08: 32-bit code
	dq 0x00CF92000000FFFF               ; 0x10: 32-bit data
	dq 0x00AF9A000000FFFF               ; 0x18: 64-bit code
	dq 0x00CF92000000FFFF               ; 0x20: data
gdt_end:
gdt_ptr:
	dw gdt_end - gdt - 1
	dd gdt
