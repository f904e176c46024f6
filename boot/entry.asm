; Kernel entry for both boot protocols. QEMU's -kernel loader speaks multiboot1 (and only
; loads 32-bit ELFs, hence the elf32-i386 copy of this image); GRUB speaks multiboot2. Both
; enter here in 32-bit protected mode with paging off. We identity-map the first 4 GiB with
; 2 MiB pages, switch to long mode and call kmain(magic, info); C code extends the map to
; the rest of RAM once it has read the memory map.

%define MB1_MAGIC       0x1BADB002
%define MB1_FLAGS       0x00000003          ; page-align modules, want memory info
%define MB2_MAGIC       0xE85250D6
%define DEBUG_EXIT_PORT 0xf4
%define EXIT_BOOT_FAILED 0x15               ; kernel/exit_codes.h

section .multiboot
align 4
mb1_header:
	dd MB1_MAGIC
	dd MB1_FLAGS
	dd 0x100000000 - (MB1_MAGIC + MB1_FLAGS)

align 8
mb2_header:
	dd MB2_MAGIC
	dd 0                                ; i386 protected mode entry
	dd mb2_header_end - mb2_header
	dd 0x100000000 - (MB2_MAGIC + (mb2_header_end - mb2_header))
align 8
	; Information request, marked optional: a firmware without ACPI still boots and the
	; kernel then says what it is missing instead of GRUB refusing to load us.
	dw 1, 1
	dd 8 + 4 * 5
	dd 1, 4, 6, 14, 15                  ; cmdline, meminfo, mmap, ACPI old RSDP, new RSDP
align 8
	dw 0, 0                             ; end tag
	dd 8
mb2_header_end:

section .boot.text progbits alloc exec nowrite
bits 32
global _start
extern kmain
extern __bss_start, __bss_end

_start:
	cli
	cld
	mov esi, eax                        ; magic and info survive the bss clear in esi/ebx
	; The loaders zero .bss, but nothing obliges them to: clear it ourselves before the
	; page tables and the stack (both live there) are used.
	mov edi, __bss_start
	mov ecx, __bss_end
	sub ecx, edi
	shr ecx, 2
	xor eax, eax
	rep stosd
	mov esp, boot_stack_top
	mov [boot_magic], esi
	mov [boot_info], ebx

	mov eax, 0x80000000
	cpuid
	cmp eax, 0x80000001
	jb no_long_mode
	mov eax, 0x80000001
	cpuid
	test edx, 1 << 29
	jz no_long_mode

	mov eax, boot_pdpt
	or eax, 3
	mov [boot_pml4], eax
	xor ecx, ecx
.pdpt:
	mov eax, ecx
	shl eax, 12
	add eax, boot_pd
	or eax, 3
	mov [boot_pdpt + ecx * 8], eax
	inc ecx
	cmp ecx, 4
	jne .pdpt

	xor ecx, ecx
.pd:
	mov eax, ecx
	shl eax, 21
	or eax, 0x83                        ; present, writable, 2 MiB page
	cmp ecx, 2048 - 16
	jb .cached
	or eax, 0x18                        ; top 32 MiB below 4 GiB is MMIO (LAPIC, IOAPIC): uncached
.cached:
	mov [boot_pd + ecx * 8], eax
	inc ecx
	cmp ecx, 2048
	jne .pd

	mov eax, boot_pml4
	mov cr3, eax
	mov eax, cr4
	or eax, 1 << 5                      ; PAE
	mov cr4, eax
	mov ecx, 0xC0000080                 ; EFER
	rdmsr
	or eax, 1 << 8                      ; LME
	wrmsr
	mov eax, cr0
	or eax, (1 << 31) | (1 << 16) | 1   ; PG, WP, PE
	mov cr0, eax
	lgdt [boot_gdt_ptr]
	jmp 0x08:long_entry

; Without long mode there is nothing we can run: say so on COM1 and exit QEMU.
no_long_mode:
	mov esi, no_lm_msg
.next:
	lodsb
	test al, al
	jz .done
	mov dx, 0x3f8
	out dx, al
	jmp .next
.done:
	mov dx, DEBUG_EXIT_PORT
	mov eax, EXIT_BOOT_FAILED
	out dx, eax
.hang:
	hlt
	jmp .hang

bits 64
long_entry:
	mov ax, 0x10
	mov ds, ax
	mov es, ax
	mov ss, ax
	xor eax, eax
	mov fs, ax
	mov gs, ax
	mov rsp, boot_stack_top
	mov edi, [boot_magic]               ; 32-bit loads zero-extend into rdi/rsi
	mov esi, [boot_info]
	call kmain
.hang:
	cli
	hlt
	jmp .hang

section .boot.rodata progbits alloc noexec nowrite
no_lm_msg: db "idlelab: this CPU has no long mode; cannot boot", 13, 10, 0

align 8
boot_gdt:
	dq 0
	dq 0x00AF9A000000FFFF               ; 0x08: 64-bit code
	dq 0x00CF92000000FFFF               ; 0x10: data
boot_gdt_end:
boot_gdt_ptr:
	dw boot_gdt_end - boot_gdt - 1
	dd boot_gdt

section .bss
align 4096
global boot_pml4
global boot_pd
boot_pml4:  resb 4096
boot_pdpt:  resb 4096
boot_pd:    resb 4096 * 4
boot_stack: resb 16384
boot_stack_top:
boot_magic: resd 1
boot_info:  resd 1
