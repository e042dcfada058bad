#!/usr/bin/env bash
# The example's end-to-end check on a GPU host (README "Tested on"): init's table as committed, then
# build with the GPU check required, verify sm_90a, publish to a strict sandbox index, install from
# that index alone and run the GPU tests against the installed wheel.
# Run from the repository root on a machine with an sm_90 GPU, nvcc and a CUDA torch in `python3`.
set -euo pipefail
kr() { python3 -m kestrel_release "$@"; }
project=examples/torch-cuda-ext
export KESTREL_RELEASE_PYTHON="${KESTREL_RELEASE_PYTHON:-$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')}"
export KESTREL_RELEASE_REQUIRES_GPU=true   # no sm_90 GPU: preflight fails (exit 3) instead of warning
out="$(mktemp -d)/dist"
log="$(mktemp -d)"

kr doctor --project "$project" || true
# torch is a build requirement and this host has it installed: build in python3's environment.
time kr build --project "$project" --frontend build --no-isolation --out "$out"
kr verify --project "$project" "$out"
kr verify --project "$project" "$out" --json > "$log/verify.json"
python3 - "$log/verify.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print("verify json: ok =", doc.get("ok"), "findings =", len(doc.get("findings", [])))
PY

kr sandbox pypi --strict > "$log/sandbox.out" 2>&1 &
sandbox=$!
trap 'kill $sandbox 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q '^kestrel-release publish' "$log/sandbox.out" && break; sleep 0.1; done
eval "$(grep '^export ' "$log/sandbox.out")"
url="$(grep '^kestrel-release publish' "$log/sandbox.out" | awk '{print $NF}')"
kr publish --project "$project" --repository-url "$url" --yes "$out"
unset TWINE_USERNAME TWINE_PASSWORD

# Installed into a folder of its own (torch comes from python3's environment), from the sandbox alone.
site="$(mktemp -d)/site"
PIP_CONFIG_FILE=/dev/null python3 -m pip install -q --isolated --no-cache-dir --no-deps --target "$site" \
    --index-url "${url}simple/" torch-cuda-ext
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import torch_cuda_ext; print("installed from the sandbox:", torch_cuda_ext.__file__)'
cd "$project/tests" && python3 -m pytest -m gpu -q -p no:cacheprovider .
