/* Stand-in for libtorch.so: one symbol, so the extension gets a real DT_NEEDED on it. */
int stub_torch_version(void) { return 211; }
