#!/usr/bin/env bash
# The compile cache on the GPU host: chamferdist 1.0.3 built cold, after a one-line .py edit (ccache serves
# the compiles), and after another .py edit with --no-cache (every file compiled again), one Python, sm_90a.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
W=/tmp/w; rm -rf $W; mkdir -p $W; tar --no-same-owner -xzf .gpu/chamferdist-1.0.3.tar.gz -C $W
P=$W/chamferdist-1.0.3; cd $P && git init -q && git add -A && git -c user.name=t -c user.email=t@e commit -qm sdist
K="python3 -m kestrel_release"
$K init --yes > $OUT/c-init.log 2>&1; git add -A; git -c user.name=t -c user.email=t@e commit -qm init
export KESTREL_RELEASE_BUILD_ENV='{"TORCH_CUDA_ARCH_LIST": "9.0a", "CXX": "/usr/bin/g++"}'
edit() { echo "# edit $1" >> chamferdist/__init__.py; git -c user.name=t -c user.email=t@e commit -qam "edit $1"; }
s=$(date +%s); $K build -v > $OUT/c-cold.log 2>&1; echo "cold rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/c-sum.log
edit 1; s=$(date +%s); $K build -v > $OUT/c-warm.log 2>&1; echo "after .py edit rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/c-sum.log
edit 2; s=$(date +%s); $K build -v --no-cache > $OUT/c-nocache.log 2>&1; echo "after .py edit, --no-cache rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/c-sum.log
grep -h "compile cache\|✓ python\|✓ build" $OUT/c-cold.log $OUT/c-warm.log $OUT/c-nocache.log | tee -a $OUT/c-sum.log
