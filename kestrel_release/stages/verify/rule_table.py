"""Every verify rule once: its id, its usual severity, what it catches and the fix.

The reference page (docs/reference/verify-rules.md) is generated from this table, and `Finding` refuses a rule
id that is not in it, so a new rule cannot ship undocumented. Severities are the usual ones: several rules also
emit warnings (standalone mode turns most errors into warnings, see stages/verify/pypi.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str  # "error", "warning" or "info": the usual one
    catches: str
    fix: str


_CORE: tuple[Rule, ...] = (
    Rule(
        "unsafe-path",
        "error",
        "absolute paths, `..`, symlink members and duplicate names in the zip",
        "rebuild the wheel with a standard backend; never hand-edit a wheel's zip",
    ),
    Rule(
        "zip-bomb",
        "error",
        "members that lie about their size, and compression ratios over 50 for members over 64 MiB",
        "rebuild the wheel; a real wheel never needs such members",
    ),
    Rule(
        "zip-format",
        "error",
        "truncated zips, encrypted or non-deflate members, a local header that disagrees with the central "
        "directory, and METADATA over the header-count or size bound",
        "rebuild the wheel with a standard backend",
    ),
    Rule(
        "record-mismatch",
        "error",
        "files missing from RECORD, or with another hash or size than RECORD says",
        "rebuild and repair the wheel again; do not edit a wheel after RECORD is written",
    ),
    Rule(
        "metadata",
        "error",
        "METADATA that does not parse, or whose name or version disagrees with the filename",
        "fix the project metadata and rebuild",
    ),
    Rule(
        "wheel-tags",
        "error",
        "WHEEL `Tag` lines other than the filename's tags (a warning outside a project)",
        "rebuild: installers and PyPI go by the filename",
    ),
    Rule(
        "source-leak",
        "error",
        "members matching `verify.forbid` (C/C++/CUDA sources and headers, Cython `.pyx`/`.pxi`, kernel "
        "templates, `csrc/`, `scripts/`, a top-level `tests/`), or outside `verify.allow`",
        "exclude the files from the wheel (package data, MANIFEST.in) or, if shipped on purpose, adjust "
        "`verify.forbid`/`verify.allow`",
    ),
    Rule(
        "secret",
        "error",
        "tokens (PyPI, GitHub, GitLab, Hugging Face, Slack, npm, OpenAI/Anthropic, AWS), private keys, "
        "`.pypirc`, `.netrc`, `.git-credentials`, `.env`, `id_rsa`-style keys; never printed",
        "remove the file from the package and revoke the credential",
    ),
    Rule(
        "build-path",
        "error",
        "home or build directories in text files, and source paths that `-G`/`-lineinfo` embed in CUDA "
        "binaries (a generated build-config module is a warning)",
        "make the path relative, or build without debug info (`verify.allow_debug` allows line info on purpose)",
    ),
    Rule(
        "missing-arch",
        "error",
        "a cubin, fat binary, `.so`, `.o` or `.dll` without the SASS `verify.required_sass` asks for",
        "add the arch to the build (`cuda_arch`, or where the package sets its arch list)",
    ),
    Rule(
        "ptx",
        "error",
        "PTX or LTO-IR in a binary when `verify.allow_ptx` is off",
        "build SASS only, or set `verify.allow_ptx` / `cuda_ptx` for archs that need PTX",
    ),
    Rule(
        "debug-info",
        "error",
        "CUDA debug info from `-G`/`-lineinfo`, as cuobjdump sees it",
        "build without `-G`/`-lineinfo`, or set `verify.allow_debug = true`",
    ),
    Rule(
        "cuda-format",
        "error",
        "a CUDA binary that cannot be read, or a fat binary whose declared sizes lie or exceed the "
        "decompression budget",
        "rebuild with a supported nvcc",
    ),
    Rule(
        "cuda-matrix",
        "error",
        "with `cuda` set, each configured (toolkit, arch) pair no binary serves by NVIDIA's rules, and a "
        "missing PTX for an arch in `cuda_ptx`",
        "build the missing pair, or drop it from `cuda`/`cuda_arch`",
    ),
    Rule(
        "arch-name",
        "error",
        "a file named for an architecture (`attn_sm90a.so`) without that SASS",
        "build that arch into the file, or rename it",
    ),
    Rule(
        "binary-platform",
        "error",
        "a binary for another CPU or OS than the wheel's platform tag (an ELF in a Windows wheel, a DLL in a "
        "Linux wheel)",
        "build each platform's wheel from that platform's binaries",
    ),
    Rule(
        "platform-tag",
        "error",
        "plain `linux_*` platform tags and others PyPI refuses",
        "repair the wheel (auditwheel) so it carries a manylinux tag",
    ),
    Rule(
        "local-version",
        "error",
        "a `+local` version bound for an index that refuses it",
        "publish local versions to a static index only",
    ),
    Rule(
        "file-size",
        "error",
        "a file over `verify.max_file_size`, or a release over the project budget (naming the largest members)",
        "shrink the wheel (fewer archs, `build.cuda_compress`) or ask the index for a larger limit",
    ),
    Rule(
        "asset-size",
        "error",
        "a file over GitHub's 2 GiB per release asset",
        "shrink the wheel below 2 GiB",
    ),
    Rule(
        "size-forecast",
        "error",
        "a release that would take the project over the index's size limit (a warning within 10% of it)",
        "delete old releases on the index, or ask for a larger project limit",
    ),
    Rule(
        "matrix",
        "error",
        "a missing or duplicate Python per platform, each missing (platform, Python) pair, wheels of another "
        "package, kernels that differ between wheels",
        "build the missing pairs (`build`, or on another machine then `assemble`)",
    ),
    Rule(
        "version-mismatch",
        "error",
        "a wheel whose METADATA or package version files say another version than the release's",
        "add the stale file to `version_files`, or remove an in-tree `build/` and rebuild",
    ),
    Rule(
        "stale-output",
        "error",
        "an output folder built under another configuration than the project's now (`built_with` in its manifest)",
        "run the build the error names, then verify again",
    ),
    Rule(
        "grafted-runtime",
        "error",
        "a torch or CUDA runtime library a repair tool grafted into the wheel",
        "add the library to `build.exclude` (torch and the CUDA runtime come from the user's install)",
    ),
    Rule(
        "bundled-runtime",
        "info",
        "a wheel that ships a runtime library as itself (nvidia-curand's `libcurand.so.10`): reported only",
        "nothing to do when the package means to ship it",
    ),
    Rule(
        "abi3",
        "error",
        "an abi3 wheel whose binaries use symbols outside the limited API (`abi3audit --strict`)",
        'use only the limited API, or build per-Python wheels (`abi = "per-python"`)',
    ),
    Rule(
        "glibc-floor",
        "error",
        "a manylinux tag above `build.min_glibc`",
        "build in an older image (`build.container`)",
    ),
    Rule(
        "cxx-runtime",
        "error",
        "a binary that defines the C++ runtime (a private static libstdc++) and needs torch, or not "
        "`libstdc++.so`: a TORCH_CHECK failure would crash instead of raising",
        "link the shared libstdc++, never `-static-libstdc++` with torch",
    ),
    Rule(
        "dedupe",
        "warning",
        "per-Python wheels of one platform that hold byte-identical binaries",
        "move the shared binaries into one py3 wheel (or build abi3) to keep one copy",
    ),
    Rule(
        "attestation",
        "error",
        "with `--attestation`, a wheel that is not the attested file: no subject of its name, or another sha256 "
        "(the in-toto statement of a PEP 740 attestation or a Sigstore bundle); with `--identity`, a signature "
        "that does not verify or another signer (a warning when no identity is named: digest only)",
        "download the wheel again from where it was published; name the publisher's identity with `--identity`",
    ),
    Rule(
        "variant-torch-pin",
        "error",
        "a variant wheel that does not pin the torch minor it was built against (`torch>=X.Y` of its target for "
        "a stable-ABI variant)",
        "rebuild the variant with the tool (`build --variant`)",
    ),
    Rule(
        "variant-cuda-major",
        "error",
        "a variant wheel whose binaries were built by another CUDA major than its variant names",
        "rebuild the variant with its own toolkit",
    ),
    Rule(
        "torch-stable-abi",
        "error",
        "a stable-ABI variant wheel (`variants.stable_abi`) whose binaries import torch's C++ ABI: mangled "
        "`at::`, `c10::`, `torch::` (not `torch::stable::`) or libtorch_python `THP*` symbols, named demangled "
        "with the header they come from",
        "use only torch/csrc/stable, torch/headeronly and the C shim (`aoti_torch_*`); include no ATen, c10 "
        "or torch/extension.h header",
    ),
    Rule(
        "variant-filename",
        "error",
        "two variants that would publish the same filename",
        "give the variants local versions or package suffixes",
    ),
)
_PYPI = tuple(
    Rule(
        f"pypi-{name}",
        "error",
        f"PyPI's upload rule on {what}, quoting PyPI's refusal word for word (`--target pypi`/`testpypi`)",
        "fix what PyPI's words name and rebuild; the strict sandbox refuses the same",
    )
    for name, what in (
        ("zip", "the zip as Warehouse reads it (data descriptors, trailing data, comments, duplicate names)"),
        ("metadata", "METADATA (Metadata-Version, License with License-Expression, direct URLs, classifiers)"),
        ("filename", "a filename that does not start with the normalized name"),
        ("license-file", "`License-File` entries missing from `.dist-info/licenses/`"),
        ("entry-points", "an `entry_points.txt` that does not parse"),
        ("encrypted", "PyArmor/SourceDefender-encrypted files"),
        ("release-age", "a new file for a release created more than 14 days ago"),
    )
)
RULES: tuple[Rule, ...] = (*_CORE, *_PYPI)
BY_ID: dict[str, Rule] = {r.id: r for r in RULES}


def markdown() -> str:
    """The reference page's table, one row per rule."""
    rows = [f"| `{r.id}` | {r.severity} | {r.catches} | {r.fix} |" for r in sorted(RULES, key=lambda r: r.id)]
    return "| rule | severity | what it catches | fix |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
