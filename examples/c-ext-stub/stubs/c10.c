/* Stand-in for libc10.so. */
int stub_c10_version(void) { return 10; }
