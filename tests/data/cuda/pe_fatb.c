/* A Windows DLL carrying an nvcc fat binary in a .nv_fatb section, where nvcc's Windows output puts it. */
__asm__(".section .nv_fatb,\"dr\"\n.balign 8\n.globl fatbin_data\nfatbin_data:\n.incbin \"k.fatbin\"\n.text\n");
__declspec(dllexport) int kernel_count(void) { return 1; }
