#!/bin/sh
# Rebuilds the committed binaries under release/ (see README.md there). Needs nvcc 13 on PATH, the
# ptxas of older toolkits from PyPI (uv pip install --target /tmp/cuXYZ nvidia-cuda-nvcc-cu11==11.8.*
# / nvidia-cuda-nvcc-cu12==12.4.* / ==12.8.*), and Debian's gcc-mingw-w64-x86-64 and gcc-aarch64-linux-gnu.
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
done
sed 's/^\.target sm_90a/.target sm_100a/' kernel-128.ptx > kernel100-128.ptx
/tmp/cu118/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90 kernel-118.ptx -o "$out/cu118-sm90.cubin"
/tmp/cu118/nvidia/cuda_nvcc/bin/ptxas -c -arch=sm_90 shared-118.ptx -o "$out/cu118-sm90-rdc.cubin"
/tmp/cu118/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90 -lineinfo kernel-118.ptx -o "$out/cu118-sm90-lineinfo.cubin"
/tmp/cu124/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90a kernel-124.ptx -o "$out/cu124-sm90a.cubin"
/tmp/cu124/nvidia/cuda_nvcc/bin/ptxas -c -arch=sm_90a shared-124.ptx -o "$out/cu124-sm90a-rdc.cubin"
/tmp/cu124/nvidia/cuda_nvcc/bin/ptxas -arch=sm_90a -g kernel-124.ptx -o "$out/cu124-sm90a-g.cubin" 2>/dev/null
/tmp/cu128/nvidia/cuda_nvcc/bin/ptxas -c -arch=sm_90a shared-128.ptx -o "$out/cu128-sm90a-rdc.cubin"
/tmp/cu128/nvidia/cuda_nvcc/bin/ptxas -arch=sm_100a kernel100-128.ptx -o "$out/cu128-sm100a.cubin"
ptxas -c -arch=sm_90a shared.ptx -o "$out/cu130-sm90a-rdc.cubin"
nvcc -fatbin -gencode 'arch=compute_90a,code=[sm_90a,compute_90a]' -o k.fatbin shared_global.cu
cp k.fatbin "$out/cu130-sm90a-ptx.fatbin"
x86_64-w64-mingw32-gcc -shared -s -O2 -nostdlib -Wl,-e,0 -o "$out/kernel_sm90a.dll" pe_fatb.c
x86_64-w64-mingw32-gcc -shared -s -O2 -nostdlib -Wl,-e,0 -o "$out/rdata_sm90a.dll" pe_rdata.c
aarch64-linux-gnu-gcc -shared -fPIC -s -O2 -nostdlib -Wl,-z,max-page-size=4096 -Wl,-z,common-page-size=4096 \
  -o "$out/aarch64_sm90a.so" elf_fatbin.c
