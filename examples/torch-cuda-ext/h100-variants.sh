#!/usr/bin/env bash
# The variants check on a GPU host without network (issue 25): build the torch x CUDA variant of
# examples/torch-cuda-ext that matches the host's torch (2.11, CUDA 13.0), publish it to a static index
# in PyTorch's layout, serve that directory on 127.0.0.1, install from it alone with
# `pip install --index-url http://127.0.0.1:PORT/cu130 torch-cuda-ext==<version>+cu130...` into a venv
# that sees the host's torch (a .pth file naming its site-packages), and run the example's GPU tests against it.
#
# Run from the repository root: python3 (3.12) with torch 2.11+cu130, nvcc 13 on PATH (or CUDA_HOME),
# an sm_90 GPU; `.whl/` may hold wheels of the tool's dependencies (installed with --no-index when
# python3 lacks them). Prints one `PASS <step>` / `FAIL <step>: why` line per step; exits 1 if any failed.
# The variants table and the static-index target are added to a copy of the example (its own
# pyproject.toml stays what `kestrel-release init` writes).
set -uo pipefail

repo="$(pwd)"
work="$(mktemp -d)"
project="$work/torch-cuda-ext"
index="$work/index"
failed=0
n=0
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; true' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=1; }
# step NAME CMD...: runs CMD with its output in $work/step-N.log ($log); PASS, or FAIL with the log's last line.
step() {
  local name="$1"; shift
  n=$((n + 1)); log="$work/step-$n.log"
  if "$@" > "$log" 2>&1; then pass "$name"; return 0; fi
  fail "$name" "$( (grep -m 1 '^error:' "$log" || grep -v '^[[:space:]]*$' "$log" | tail -n 1) | cut -c1-300) (log: $log)"
  return 1
}
fetch() { "$host_python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' "$1"; }
finish() { echo "logs: $work"; [ "$failed" = 0 ] && echo "ALL PASS" || echo "SOME FAILED"; exit "$failed"; }

host_python=${PYTHON:-python3}
# stdout only: importing torch may print warnings (no NumPy, ...) on stderr, kept for the failure line.
torch_info="$("$host_python" -c 'import sys, torch; print(f"{sys.version_info[0]}.{sys.version_info[1]}", torch.__version__, torch.version.cuda, torch.cuda.is_available() and "sm_%d%d" % torch.cuda.get_device_capability())' 2> "$work/torch-probe.err" | tail -n 1)"
[ -n "$torch_info" ] || torch_info="$(tail -n 1 "$work/torch-probe.err")"
read -r py torch_version torch_cuda gpu <<< "$torch_info"
# The H100 host has torch 2.11+cu130; any torch of CUDA 13.0 runs the same check (its minor is the variant built).
case "$torch_version:$torch_cuda" in
  2.*:13.0) pass "host torch $torch_version (CUDA $torch_cuda), Python $py, GPU $gpu" ;;
  *) fail "host torch" "$host_python has no torch of CUDA 13.0 ($torch_info)"; finish ;;
esac
torch_minor="${torch_version%.*}"; torch_minor="${torch_minor%%+*}"
nvcc_bin="$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")"
if "$nvcc_bin" --version 2>/dev/null | grep -q 'release 13\.'; then pass "nvcc 13 ($nvcc_bin)"
else fail "nvcc 13" "no nvcc of CUDA 13 on PATH or in CUDA_HOME"; fi
export PATH="$(dirname "$nvcc_bin"):$PATH"

# The tool: this checkout, with its dependencies from python3 or else from .whl/ (offline).
tool_py="$host_python"
if ! "$host_python" -c 'import typer, rich, packaging, jinja2' 2>/dev/null; then
  # The dependencies only (the checkout runs from PYTHONPATH): its build backend is not in .whl/.
  step "tool dependencies from .whl/" bash -c "'$host_python' -m venv --system-site-packages '$work/tool' && \
    '$work/tool/bin/python' -m pip install -q --no-index --find-links '$repo/.whl' '$repo'/.whl/*.whl" || finish
  tool_py="$work/tool/bin/python"
fi
kr() { PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "$tool_py" -m kestrel_release "$@"; }
step "kestrel-release --version" kr --version || finish

# The example with a variants matrix: the host's torch minor x CUDA 13.0 builds here; a newer torch minor
# (the default, the one PyPI gets) needs its torch from an index this host cannot reach: listed, not built.
cp -r "$repo/examples/torch-cuda-ext" "$project"
rm -rf "$project/build" "$project"/*.egg-info
next_minor="${torch_minor%.*}.$(( ${torch_minor#*.} + 1 ))"
cat >> "$project/pyproject.toml" <<EOF

[tool.kestrel-release.variants]
torch = ["$torch_minor", "$next_minor"]
cuda = ["13.0"]
default = {torch = "$next_minor", cuda = "13.0"}

[tool.kestrel-release.targets.wheels]
kind = "static-index"
dir = "$index"
EOF
export KESTREL_RELEASE_PYTHON="$py"
export KESTREL_RELEASE_REQUIRES_GPU=true   # no sm_90 GPU: preflight fails (exit 3) instead of warning
out="$project/dist-all"
variant="torch${torch_minor/./}-cxx11-cu130-x86_64-linux"

step "build variant $variant (host torch, no isolation)" \
  kr build --project "$project" --frontend build --no-isolation --variant "torch$torch_minor-cu130" --out "$out" \
  || finish
wheel="$(ls "$out/variants/$variant"/*.whl 2>/dev/null | head -n 1)"
[ -n "$wheel" ] && pass "wheel $(basename "$wheel")" || { fail "variant wheel" "none in $out/variants/$variant"; finish; }
version="$(basename "$wheel" | cut -d- -f2)"
case "$version" in *+cu130*) pass "local version $version";; *) fail "local version" "$version has no +cu130";; esac
step "METADATA pins torch==$torch_minor.*" "$host_python" -c '
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
pins = [l for l in meta.splitlines() if l.startswith("Requires-Dist: torch")]
print(pins)
assert f"Requires-Dist: torch=={sys.argv[2]}.*" in pins, pins' "$wheel" "$torch_minor"
# A +cu130 variant goes to the static index, never to PyPI: verify it under that target's rules.
step "verify $variant for the static index" kr verify --project "$project" --target wheels "$out/variants/$variant"

step "publish to the static index" kr publish --project "$project" --target wheels "$wheel" || finish
before="$(cd "$index" && find . -type f -exec sha256sum {} + | sort)"
step "publish again (idempotent)" kr publish --project "$project" --target wheels "$wheel"
[ "$before" = "$(cd "$index" && find . -type f -exec sha256sum {} + | sort)" ] && pass "second publish changed no file" \
  || fail "second publish" "files in $index changed"
[ -f "$index/cu130/torch-cuda-ext/index.html" ] && [ -f "$index/cu130/torch-cuda-ext/index.json" ] \
  && pass "PyTorch layout: cu130/torch-cuda-ext/index.html + index.json" || fail "layout" "$(cd "$index" && find . -type f)"

port="$("$host_python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$host_python" -m http.server --bind 127.0.0.1 --directory "$index" "$port" > "$work/http.log" 2>&1 &
server=$!
for _ in $(seq 100); do fetch "http://127.0.0.1:$port/cu130/" 2> /dev/null && break; sleep 0.1; done
step "static host serves http://127.0.0.1:$port/cu130/" fetch "http://127.0.0.1:$port/cu130/torch-cuda-ext/"

venv="$work/venv"
step "venv with the host's torch" "$host_python" -m venv "$venv" || finish
# --system-site-packages would give the base interpreter's site-packages, not those of a python3 that is itself
# a venv (the H100's /opt/torch/.venv): a .pth file puts the host's own site-packages (torch, pytest) on sys.path.
host_site="$("$host_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
venv_site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$host_site" > "$venv_site/host-site-packages.pth"
pipi() { PIP_CONFIG_FILE=/dev/null "$venv/bin/python" -m pip install --isolated --no-cache-dir --disable-pip-version-check \
  --index-url "http://127.0.0.1:$port/cu130" "$@"; }
if ! step "pip install --index-url .../cu130 torch-cuda-ext==$version" pipi "torch-cuda-ext==$version"; then
  step "pip install --no-deps (torch's own requirements unmet on this host)" pipi --no-deps "torch-cuda-ext==$version"
fi
grep -q "GET /cu130/torch-cuda-ext/" "$work/http.log" && pass "installed through the static host" \
  || fail "static host" "no request for /cu130/torch-cuda-ext/ in $work/http.log"
step "import from the venv, not the sources" bash -c "cd / && '$venv/bin/python' -c 'import torch_cuda_ext, sys; \
  assert \"$venv\" in torch_cuda_ext.__file__, torch_cuda_ext.__file__; print(torch_cuda_ext.__version__)'"
step "GPU tests (pytest -m gpu) against the installed wheel" \
  bash -c "cd '$project/tests' && '$venv/bin/python' -m pytest -m gpu -q -p no:cacheprovider -rs ."
summary="$(grep -E "passed|failed|skipped|error" "$log" | tail -n 1)"
echo "  pytest: $summary"
case "$summary" in *skipped*) fail "GPU tests ran" "some were skipped (no sm_90 GPU?): see $log";; esac
finish
