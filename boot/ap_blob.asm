; The assembled AP trampoline, embedded so the kernel can copy it below 1 MiB.
section .rodata
global ap_trampoline_start, ap_trampoline_end
ap_trampoline_start:
	incbin "ap_trampoline.bin"
ap_trampoline_end:
