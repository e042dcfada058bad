/* A shared object with no CUDA in it: what a plain C extension ships. */
int kestrel_plain(int x) { return x * 42; }
