#!/bin/sh
# Rebuilds the committed binaries under release/ (see README.md there). Needs nvcc 13 on PATH, the
# ptxas of older toolkits from PyPI (uv pip install --target /tmp/cuXYZ nvidia-cuda-nvcc-cu11==11.8.*
# / nvidia-cuda-nvcc-cu12==12.4.* / ==12.8.* / ==12.9.*), and Debian's gcc-mingw-w64-x86-64 and gcc-aarch64-linux-gnu.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/release
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cp "$here/kernel.cu" "$here/shared_global.cu" "$here/pe_fatb.c" "$here/pe_rdata.c" "$here/elf_fatbin.c" .
nvcc -ptx -arch=compute_90a -o kernel.ptx kernel.cu
nvcc -ptx -arch=compute_90a -o shared.ptx shared_global.cu
# Older ptxas accept older PTX ISA versions only; CUDA 11.8 knows sm_90 but not sm_90a.
for src in kernel shared; do
  sed 's/^\.version .*/.version 7.8/; s/^\.target sm_90a/.target sm_90/' $src.ptx > $src-118.ptx
  sed 's/^\.version .*/.version 8.4/' $src.ptx > $src-124.ptx
  sed 's/^\.version .*/.version 8.7/' $src.ptx > $src-128.ptx
  sed 's/^\.version .*/.version 8.8/' $src.ptx > $src-129.ptx
done
sed 's/^\.target sm_90a/.target sm_100a/' kernel-128.ptx > kernel100-128.ptx
sed 's/^\.target sm_90a/.target sm_100a/' kernel-129.ptx > kernel100-129.ptx
sed 's/^\.target sm_90a/.target sm_103a/' kernel-129.ptx > kernel103-129.ptx
/tmp/cu118/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90 kernel-118.ptx -o "$out/cu118-sm90.cubin"
/tmp/cu118/nvidia/cuda_nvcc/bin/ptxas -c -arch=sm_90 shared-118.ptx -o "$out/cu118-sm90-rdc.cubin"
/tmp/cu118/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90 -lineinfo kernel-118.ptx -o "$out/cu118-sm90-lineinfo.cubin"
/tmp/cu124/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90a kernel-124.ptx -o "$out/cu124-sm90a.cubin"
/tmp/cu124/nvidia/cuda_nvcc/bin/ptxas -c -arch=sm_90a shared-124.ptx -o "$out/cu124-sm90a-rdc.cubin"
/tmp/cu124/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90a -g kernel-124.ptx -o "$out/cu124-sm90a-g.cubin" 2>/dev/null
/tmp/cu128/nvidia/cuda_nvcc/bin/ptxas -c -arch=sm_90a shared-128.ptx -o "$out/cu128-sm90a-rdc.cubin"
/tmp/cu128/nvidia/cuda_nvcc/bin/ptxas -arch=sm_100a kernel100-128.ptx -o "$out/cu128-sm100a.cubin"
# Debug and release pairs for every e_flags layout (ABI V1 and V2; CUDA 12.8, 12.9, 13.0): debug info is what
# cuobjdump shows, DWARF/line/PTX-text sections, whatever the high byte of a V2 e_flags holds.
/tmp/cu128/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90a -g kernel-128.ptx -o "$out/cu128-sm90a-g.cubin" 2>/dev/null
/tmp/cu128/nvidia/cuda_nvcc/bin/ptxas -arch=sm_100a -g kernel100-128.ptx -o "$out/cu128-sm100a-g.cubin" 2>/dev/null
/tmp/cu129/nvidia/cuda_nvcc/bin/ptxas -arch=sm_100a kernel100-129.ptx -o "$out/cu129-sm100a.cubin"
/tmp/cu129/nvidia/cuda_nvcc/bin/ptxas -arch=sm_100a -g kernel100-129.ptx -o "$out/cu129-sm100a-g.cubin" 2>/dev/null
/tmp/cu129/nvidia/cuda_nvcc/bin/ptxas -arch=sm_103a kernel103-129.ptx -o "$out/cu129-sm103a.cubin"
/tmp/cu129/nvidia/cuda_nvcc/bin/ptxas -arch=sm_103a -lineinfo kernel103-129.ptx -o "$out/cu129-sm103a-lineinfo.cubin"
# The top byte of a V2 e_flags is the index of the toolkit note: a release build with its note at 13 (bit
# 0x08000000 set, as in flashinfer-cubin 0.5.0's fmhaSm100a cubins, which have it at 15).
python3 "$here/move_note.py" "$out/cu129-sm100a.cubin" "$out/cu129-sm100a-note13.cubin" 13
ptxas -c -arch=sm_90a shared.ptx -o "$out/cu130-sm90a-rdc.cubin"
nvcc -cubin -arch=sm_90a -o "$out/cu130-sm90a.cubin" kernel.cu
nvcc -cubin -arch=sm_90a -lineinfo -o "$out/cu130-sm90a-lineinfo.cubin" kernel.cu
nvcc -cubin -arch=sm_100a -o "$out/cu130-sm100a.cubin" kernel.cu
nvcc -cubin -arch=sm_100a -G -o "$out/cu130-sm100a-G.cubin" kernel.cu
nvcc -fatbin -gencode 'arch=compute_90a,code=[sm_90a,compute_90a]' -o k.fatbin shared_global.cu
cp k.fatbin "$out/cu130-sm90a-ptx.fatbin"
x86_64-w64-mingw32-gcc -shared -s -O2 -nostdlib -Wl,-e,0 -o "$out/kernel_sm90a.dll" pe_fatb.c
x86_64-w64-mingw32-gcc -shared -s -O2 -nostdlib -Wl,-e,0 -o "$out/rdata_sm90a.dll" pe_rdata.c
aarch64-linux-gnu-gcc -shared -fPIC -s -O2 -nostdlib -Wl,-z,max-page-size=4096 -Wl,-z,common-page-size=4096 \
  -o "$out/aarch64_sm90a.so" elf_fatbin.c
