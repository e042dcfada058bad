#!/usr/bin/env bash
# On an offline GPU host (Python 3.12 with torch, nvcc): a third-party torch CUDA extension (chamferdist 1.0.3,
# sha256 in tools/fetch-real-extensions) from `init --yes` through `release --rehearse`, its GPU op called in the
# smoke test (smoke.py), then a second rehearsal with a bump, the version checked in the wheel.
# Prepare on a machine with PyPI, in the checkout's root (both folders git-ignored, carried to the host):
#   mkdir -p .gpu .whl && cp ~/.cache/kestrel-release-ci/real-ext/chamferdist-1.0.3.tar.gz tools/gpu-rehearsal/smoke.py .gpu/
#   tools/uv export --frozen --no-dev --no-hashes --no-emit-project > req.txt   (drop the win32/darwin lines), then
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 ... -d .whl -r req.txt
# Run there from the checkout's root with OUT set to a folder for the logs: bash tools/gpu-rehearsal/run.sh
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
ROOT=$PWD
{ python3 -c "import torch,sys; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name())"; which nvcc python3 uv; nvcc --version | tail -1; nproc; ls /usr/bin/python3* /usr/local/bin/python3* 2>/dev/null; } 2>&1 | tee $OUT/host.log
W=/tmp/w; rm -rf $W; mkdir -p $W; tar --no-same-owner -xzf .gpu/chamferdist-1.0.3.tar.gz -C $W
P=$W/chamferdist-1.0.3; cp .gpu/smoke.py /tmp/smoke.py
cd $P && git init -q && git add -A && git -c user.name=t -c user.email=t@e commit -qm sdist
K="python3 -m kestrel_release"
$K init --yes > $OUT/init.log 2>&1; echo "init rc=$?" >> $OUT/init.log
cat pyproject.toml >> $OUT/init.log; git add -A; git -c user.name=t -c user.email=t@e commit -qm init
export KESTREL_RELEASE_SMOKE_TEST_REUSE=torch KESTREL_RELEASE_SMOKE_TEST_COMMAND="{python} /tmp/smoke.py"
{ echo "CXX=${CXX:-} CC=${CC:-}"; which c++ g++ gcc; ls /usr/bin/g++* /usr/bin/c++* 2>&1; ${CXX:-c++} --version | head -1; } > $OUT/cxx.log 2>&1
timeout 120 $K doctor > $OUT/doctor.log 2>&1; echo "doctor rc=$?" >> $OUT/doctor.log
# doctor's advice, followed as a user would (a setting, not an edit of the package):
if grep -q "private static libstdc" $OUT/doctor.log && [ -x /usr/bin/g++ ]; then
  export KESTREL_RELEASE_BUILD_ENV='{"TORCH_CUDA_ARCH_LIST": "9.0a", "CXX": "/usr/bin/g++"}'; echo "following doctor: CXX=/usr/bin/g++" >> $OUT/doctor.log
  timeout 120 $K doctor >> $OUT/doctor.log 2>&1; echo "doctor rc=$?" >> $OUT/doctor.log
fi
s=$(date +%s); timeout ${T1:-280} $K release --rehearse --yes --targets testpypi,pypi -v > $OUT/rehearse1.log 2>&1; echo "rehearse1 rc=$? $(( $(date +%s)-s ))s" >> $OUT/rehearse1.log
ls -la dist-all >> $OUT/rehearse1.log 2>&1
s=$(date +%s); timeout ${T2:-200} $K release --rehearse --yes --bump patch --targets testpypi,pypi > $OUT/rehearse2.log 2>&1; echo "rehearse2 rc=$? $(( $(date +%s)-s ))s" >> $OUT/rehearse2.log
python3 - >> $OUT/rehearse2.log 2>&1 <<'PY'
import glob, zipfile
for w in sorted(glob.glob("dist-all/*.whl")):
    z = zipfile.ZipFile(w)
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    version = next(l for l in z.read(meta).decode().splitlines() if l.startswith("Version:"))
    print(w, version, "| chamferdist/version.py:", z.read("chamferdist/version.py").decode().strip())
PY
git status --short >> $OUT/rehearse2.log
cp ~/.cache/kestrel-release/projects/*/build-logs/smoke-command-*.log $OUT/ 2>/dev/null
for f in $OUT/*.log; do echo "== $f"; tail -n 4 $f; done
