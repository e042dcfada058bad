#!/usr/bin/env bash
# On the lent GPU host (16 cores, offline): the figures of benchmarks/RESULTS.md's GPU-host section.
# 1. `real`: chamferdist 1.0.3 (benchmarks/bench_real_ext.py, the interpreters' own torch, sm_90a): the seed's loop
#    cold, the tool cold, after a .py edit and after a .cu edit.
# 2. `kernels`: the bundled kernels at their configured (toolkit, arch) matrix (the toolkits found offline), the tool
#    cold and after a .py edit, against the seed's loop (`python -m build --wheel --no-isolation`) cold and after the edit.
# Prepare here: mkdir -p .gpu .whl; cp <fetch-real-extensions cache>/chamferdist-1.0.3.tar.gz .gpu/; cp /work/main/.whl/* .whl/
# Run there (carry .gpu and .whl): bash tools/gpu-rehearsal/parallel-bench.sh real|kernels
# The host has only CUDA 13.0 and no network: the CUDA 12.9 toolkit the kernels' matrix names comes from this
# machine's tool cache, packed and split so each call stays under the carry limit (`tar -C ~/.cache/kestrel-release/
# toolkits -cf - cuda-12.9 | zstd | split -b 20M`, with its sha256 in tk.sha256), carried as .tk in calls of
# `parallel-bench.sh stage` (parts kept in /tmp/tkparts on the warm host) before `kernels`.
set -u
if [ "${1:-}" = stage ]; then mkdir -p /tmp/tkparts && cp .tk/* /tmp/tkparts/ && ls -la /tmp/tkparts; exit 0; fi
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH KESTREL_REAL_EXT_CACHE=$PWD/.gpu
ROOT=$PWD
{ nproc; free -g | head -2; python3 -c "import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name())";
  nvcc --version | tail -1; ls -d /usr/local/cuda-* 2>/dev/null; ls /usr/bin/python3.* /usr/local/bin/python3.* 2>/dev/null | tr '\n' ' '; echo;
  python3 -c "import skbuild_core" 2>&1 | tail -1; which cmake ninja ccache uv; uptime; } > $OUT/host.log 2>&1
if [ "${1:-}" = real ]; then
  BENCH_CXX=/usr/bin/g++ timeout 540 python3 benchmarks/bench_real_ext.py --pythons 3.12 --torch host --arch 9.0a \
    --work /tmp/re --json $OUT/real-ext.json > $OUT/real-ext.out 2>&1; echo "real rc=$?" >> $OUT/real-ext.out
  cp /tmp/re/real-ext.log $OUT/ 2>/dev/null
  exit 0
fi
# kernels
K=/tmp/k; rm -rf $K; cp -r $ROOT/kernels $K; rm -rf $K/python/kestrel_kernels/precompiled $K/build
cd $K && git init -q && git add -A && git -c user.name=t -c user.email=t@e commit -qm k
CUDAS=13.0; ls -d /usr/local/cuda-12.9 >/dev/null 2>&1 && CUDAS=12.9,13.0
rm -rf /tmp/kc; mkdir -p /tmp/kc/toolkits
if [ -f /tmp/tkparts/tk.sha256 ]; then
  (cd /tmp/tkparts && cat tk.part.* > tk.tar.zst && sha256sum -c tk.sha256 && python3 -c "import sys, zstandard; zstandard.ZstdDecompressor().copy_stream(open('tk.tar.zst', 'rb'), sys.stdout.buffer)" | tar -C /tmp/kc/toolkits -xf -) >> $OUT/host.log 2>&1 && CUDAS=12.9,13.0
fi
export KESTREL_RELEASE_CUDA=$CUDAS KESTREL_RELEASE_PYTHON=3.12 KESTREL_RELEASE_CACHE_DIR=/tmp/kc
t() { local s=$(date +%s.%N); "$@" >> $OUT/kernels.log 2>&1; local rc=$?; echo "$(python3 -c "print(round($(date +%s.%N)-$s,2))") s rc=$rc: $*" | tee -a $OUT/kernels-sum.log; }
edit() { echo "# edit $1" >> python/kestrel_kernels/__init__.py; git -c user.name=t -c user.email=t@e commit -qam "edit $1"; }
echo "toolkits: $CUDAS; archs: $(grep ^cuda_arch pyproject.toml)" >> $OUT/kernels-sum.log
t python3 -m kestrel_release build --no-isolation -v --out /tmp/kout
edit 1; t python3 -m kestrel_release build --no-isolation -v --out /tmp/kout
rm -rf python/kestrel_kernels/precompiled build; git clean -qfdx -e dist-all
t env TORCH_CUDA_ARCH_LIST=9.0a CUDACXX=$(which nvcc) python3 -m build --wheel --no-isolation --outdir /tmp/loop
edit 2; t env TORCH_CUDA_ARCH_LIST=9.0a CUDACXX=$(which nvcc) python3 -m build --wheel --no-isolation --outdir /tmp/loop
grep -h "parallelism\|forecast\|compile cache\|✓ precompile\|✓ python\|wheels in" $OUT/kernels.log >> $OUT/kernels-sum.log
