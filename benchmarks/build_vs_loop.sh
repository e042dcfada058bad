#!/usr/bin/env bash
# Wall time of the seed's sequential loop vs `kestrel-release build` (cold and warm caches),
# on a private copy of kernels/. Usage: benchmarks/build_vs_loop.sh [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=$ROOT/.venv/bin
ROUNDS=${1:-1}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r "$ROOT/kernels" "$WORK/kernels"
rm -rf "$WORK/kernels/dist" "$WORK/kernels/dist-all" "$WORK/kernels/build"
export PATH="$VENV:$PATH" SOURCE_DATE_EPOCH=1700000000
py() { "$VENV/python" -c "from kestrel_release.adapters.pythons import find_interpreter as f; print(f('$1'))"; }
declare -A PY; for v in 3.10 3.11 3.12 3.13; do PY[$v]=$(py $v); done
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }

loop() {
  cd "$WORK/kernels"
  rm -rf wheelhouse python/kestrel_kernels/precompiled   # cold, like ours
  for v in 3.10 3.11 3.12 3.13; do
    rm -rf build dist
    uv build --wheel --python "${PY[$v]}" --out-dir dist .
    python -m auditwheel repair --plat manylinux_2_34_x86_64 --only-plat -w wheelhouse dist/*.whl
  done
}
ours() { "$VENV/kestrel-release" build --project "$WORK/kernels" --out "$WORK/out" --no-gpu-check; }

for r in $(seq "$ROUNDS"); do
  loop_s=$(t loop)
  export KESTREL_RELEASE_CACHE_DIR="$WORK/cache-$r"
  rm -rf "$WORK/kernels/python/kestrel_kernels/precompiled"   # cold: nothing compiled anywhere
  cold_s=$(t ours)
  warm_s=$(t ours)
  echo "round $r: loop ${loop_s}s  cold ${cold_s}s  warm ${warm_s}s  (cold/loop $(echo "scale=2; $cold_s/$loop_s" | bc), warm/loop $(echo "scale=2; $warm_s/$loop_s" | bc))"
done
