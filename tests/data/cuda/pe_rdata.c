/* A Windows DLL carrying an nvcc fat binary as plain read-only data, where only a magic scan finds it. */
__asm__(".section .rdata$fatbin,\"dr\"\n.balign 8\n.globl fatbin_data\nfatbin_data:\n.incbin \"k.fatbin\"\n.text\n");
__declspec(dllexport) int kernel_count(void) { return 1; }
