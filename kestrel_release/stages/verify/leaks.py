"""What must never ship: source files, secrets, build paths, PTX and debug info.

Content checks run inside the single read pass (`ContentScanner.visit`), so a
member's bytes are looked at once, while they are in memory.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from kestrel_release.artifacts import archname, binformat, cuda_binary, elf, fatbin
from kestrel_release.stages.verify.finding import Finding as Finding  # re-exported for older imports
from kestrel_release.stages.verify.needles import needled, windows

if TYPE_CHECKING:
    from kestrel_release.artifacts.wheel import Member

TEXT_LIMIT = 16 * 1024 * 1024  # larger members are not text; binaries this small are still scanned for secrets
# Files that hold credentials by what they are: .pypirc, .netrc, .git-credentials, .env and .env.<stage>
# (not the .env.example-style templates projects ship on purpose: their content is scanned like any text),
# OpenSSH private keys (not their .pub halves).
SECRET_FILES = re.compile(
    r"^(\.pypirc|[._]netrc|\.git-credentials|\.env(?!\.(?:example|sample|template|dist|defaults?)$)(\..+)?"
    r"|id_(rsa|dsa|ecdsa|ed25519)(_sk)?)$"
)
_SECRETS = [  # (what, pattern + the literals every match holds); the matched value is never printed
    ("a PyPI token", needled(rb"pypi-AgE[A-Za-z0-9_-]{40,}", b"pypi-AgE")),
    (
        "a GitHub token",
        needled(
            rb"\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
            b"ghp_",
            b"gho_",
            b"ghu_",
            b"ghs_",
            b"ghr_",
            b"github_pat_",
        ),
    ),
    # A key is its armor line AND a base64 body (after optional `Proc-Type:` headers, real or `\\n`-escaped
    # line breaks): the armor line alone is a parser's constant (cryptography's serialization/ssh.py).
    (
        "a private key",
        needled(
            rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[rn])+"
            rb"(?:[A-Za-z-]+: [^\r\n\\]*(?:[\r\n]|\\[rn])(?:\s|\\[rn])*)*[A-Za-z0-9+/]{40}",
            b"-----BEGIN ",
        ),
    ),
    ("an AWS access key", needled(rb"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", b"AKIA", b"ASIA")),
    ("a GitLab token", needled(rb"\bglpat-[A-Za-z0-9_-]{20,}", b"glpat-")),
    ("a Hugging Face token", needled(rb"\bhf_[A-Za-z0-9]{34,}\b", b"hf_")),
    ("a Slack token", needled(rb"\bxox[abposr]-[0-9]{6,}-[A-Za-z0-9-]{10,}", b"xox")),
    ("an npm token", needled(rb"\bnpm_[A-Za-z0-9]{36}\b", b"npm_")),
    (
        "an OpenAI or Anthropic API key",
        needled(rb"\bsk-(?:proj|ant-api\d\d)-[A-Za-z0-9_-]{32,}", b"sk-proj-", b"sk-ant-"),
    ),
]
# What a match may hold before its run of token bytes: a PEM armor line and its Proc-Type/DEK-Info headers.
SECRET_LEAD = 1024
MAX_PLACEHOLDERS = 1000  # placeholder matches skipped per pattern and member before giving up


def _placeholder(token: bytes) -> bool:
    """Documentation's stand-ins, not credentials: AWS's own example keys (AKIAIOSFODNN7EXAMPLE) and tokens
    whose tail has fewer than 4 distinct characters (`ghp_xxxx...`, `ghp_0000...00ab`); a real token's random
    part has ~15 distinct characters in 20."""
    return token.endswith(b"EXAMPLE") or len(set(token[-20:])) < 4


_HOME = needled(
    rb"(?:/home/[\w.-]+|/Users/[\w.-]+|/root)/[\w./+-]*|[A-Za-z]:\\\\?Users\\\\?[\w.-]+",
    b"/home/",
    b"/Users/",
    b"/root/",
    (b":\\Users", 1),
    (b":\\\\Users", 1),
)
SYSTEM_PREFIXES = ("/usr/", "/opt/", "/lib/", "/lib64/", "/etc/")


def glob_match(name: str, pattern: str) -> bool:
    """Match a member path at any depth: '*.cu', '**/kernel.py', 'csrc/**'; '/tests/**' only at the root.

    Why every suffix: a kernel package's source dirs land under the package
    (kestrel_kernels/csrc/...) as easily as at the top of the wheel.
    """
    if pattern.startswith("/"):  # anchored: the wheel's top level only
        return fnmatch.fnmatchcase(name, pattern[1:])
    pattern = pattern[3:] if pattern.startswith("**/") else pattern
    parts = name.split("/")
    for i in range(len(parts)):
        if i and parts[i - 1].endswith(".data"):
            continue  # <name>.data/scripts/ is the wheel's own layout, not a source dir
        if fnmatch.fnmatchcase("/".join(parts[i:]), pattern):
            return True
    return False


# A compiled extension module, wherever the backend puts it: importable dirs, then name[.ABI tag].so|.pyd
# (demo_cuda.cpython-312-x86_64-linux-gnu.so, _C.abi3.so, ext.cp312-win_amd64.pyd, mod.pypy310-pp73-...);
# a bare libfoo.so is a library, not a module, and stays under the allow-list.
EXTENSION_MODULE = re.compile(
    r"^(?:[A-Za-z_]\w*/)*[A-Za-z_]\w*"
    r"(?:\.(?:cpython-\d+[a-z]*(?:-[\w]+)*|abi3|pypy\d+-pp\d+(?:-[\w]+)*)\.so"
    r"|(?:\.cp\d+[a-z]*-\w+)?\.pyd)$"
)


def check_names(names: list[str], forbid: tuple[str, ...], allow: tuple[str, ...]) -> list[Finding]:
    """source-leak for forbidden globs and, with an allow-list, anything outside it (never a compiled
    extension module: it is the package's own binary, wherever the backend put it); secret files."""
    out = []
    for name in names:
        base = name.rsplit("/", 1)[-1]
        hit = next((p for p in forbid if glob_match(name, p)), None)
        if hit:
            out.append(
                Finding(
                    "source-leak",
                    "error",
                    name,
                    f"matches the forbidden pattern '{hit}': exclude it from the wheel, or drop "
                    f"'{hit}' from verify.forbid if it ships on purpose",
                )
            )
        elif (
            allow
            and ".dist-info/" not in name
            and not EXTENSION_MODULE.match(name)
            and not any(glob_match(name, p) for p in allow)
        ):
            out.append(
                Finding(
                    "source-leak",
                    "error",
                    name,
                    "not in verify.allow: exclude it from the wheel or add it to the allow-list",
                )
            )
        if SECRET_FILES.match(base):
            out.append(
                Finding(
                    "secret",
                    "error",
                    name,
                    f"a credentials file ('{base}') is in the wheel: remove it and rotate what it holds",
                )
            )
    return out


@dataclass
class ContentScanner:
    """Per-member content checks, called from the wheel reader's single pass."""

    project_dir: str = ""
    build_dirs: tuple[str, ...] = ()  # where build copied the sources to compile them (statedir.sources)
    findings: list[Finding] = field(default_factory=list)
    cuda: list[cuda_binary.CudaInfo] = field(default_factory=list)
    binaries: list[tuple[str, binformat.BinaryKind]] = field(default_factory=list)  # for the platform rule
    # What the CUDA reader may decompress in this wheel, all binaries together: a wheel of lying
    # fat-binary headers costs bounded time and memory.
    budget: fatbin.Budget = field(default_factory=cuda_binary.wheel_budget)

    def fresh(self) -> ContentScanner:
        """An empty scanner for one member, drawing on this one's budget (the wheel reader's `work`)."""
        return ContentScanner(self.project_dir, self.build_dirs, budget=self.budget)

    def merge(self, other: ContentScanner) -> None:
        """Take what `other` (a fresh() one) found; called in member order, so reports stay in that order."""
        self.findings += other.findings
        self.cuda += other.cuda
        self.binaries += other.binaries

    def visit(self, member: Member, data: bytes | memoryview) -> None:
        name = member.name
        kind = binformat.identify(data) if binformat.loaded_on_the_platform(name) else None
        if kind is not None:
            self.binaries.append((name, kind))
        if cuda_binary.is_cuda_candidate(name):
            self._cuda(name, data)
        if len(data) > TEXT_LIMIT:
            return
        blob = bytes(data)
        self._secrets(name, blob, elf.data_spans(blob) or [(0, len(blob))])
        if b"\0" not in blob[:8192]:
            self._build_paths(name, blob)

    def _cuda(self, name: str, data: bytes | memoryview) -> None:
        try:
            info = cuda_binary.inspect_bytes(data, name, self.budget)
        except cuda_binary.CudaFormatError as exc:
            self.findings.append(
                Finding("cuda-format", "error", name, f"{exc.message}: a binary that cannot be read cannot be checked")
            )
            return
        if info.has_cuda or name.endswith((".cubin", ".fatbin")) or archname.named_archs(name):
            self.cuda.append(info)

    def _secrets(self, name: str, blob: bytes, spans: list[tuple[int, int]]) -> None:
        near = [w for start, end in spans for w in windows(blob, start, end, SECRET_LEAD)]
        for what, pattern in _SECRETS:
            match = None
            for start, end in near:
                match, skipped = pattern.first(blob, start, end), 0
                while match and _placeholder(match.group()) and skipped < MAX_PLACEHOLDERS:
                    match, skipped = pattern.first(blob, match.end(), end), skipped + 1
                if match and not _placeholder(match.group()):
                    break
            if match and not _placeholder(match.group()):
                line = blob.count(b"\n", 0, match.start()) + 1
                self.findings.append(
                    Finding("secret", "error", name, f"{what} at line {line}: remove it and revoke it now")
                )

    def _build_paths(self, name: str, blob: bytes) -> None:
        # Prose (the README in METADATA, shipped docs) shows example paths; only this build's own
        # directory found there is a leak. Code, RECORD, .pth, direct_url.json: any home path is.
        if name.endswith(".dist-info/METADATA"):
            outside_prose = _metadata_headers(blob)
        else:
            outside_prose = b"" if _is_doc(name) else blob
        match = _HOME.first(outside_prose)
        where = _whole_path(outside_prose, match.start(), match.end()) if match else None
        # This build's own directories, wherever they are (the clean copies in a cache outside home).
        needle = next((d.encode() for d in (self.project_dir, *self.build_dirs) if d and d.encode() in blob), None)
        if where is None and needle:
            start = blob.index(needle)
            where = _whole_path(blob, start, start + len(needle))
        if not where:
            return
        where = user_path(where, self.project_dir, self.build_dirs)
        if _BUILD_CONFIG.search(name):
            # meson's configure_file (numpy/scipy __config__.py, contourpy util/_build_config.py) records
            # where the build ran, for build_config() to report: it is read, not used to find files.
            self.findings.append(
                Finding(
                    "build-path",
                    "warning",
                    name,
                    f"a generated build-config module records the build path '{where}': nothing loads files "
                    "from it, but it shows the build machine's directories; build in a neutral directory "
                    "(e.g. a CI checkout) if that matters",
                )
            )
            return
        self.findings.append(
            Finding("build-path", "error", name, f"absolute build path '{where}' in a text file: make it relative")
        )


# Build-config modules a build generates to report how it was configured (paths included).
_BUILD_CONFIG = re.compile(r"(^|/)(__config__|_?build_?config|_?build_?info|_config_info)\.pyi?$")
_PATH_END = re.compile(rb"[^\s\"'`<>|;,()\[\]{}]*")
MAX_PATH = 4096  # PATH_MAX: a longer run is not one path


def _whole_path(blob: bytes, start: int, end: int) -> str:
    """The whole path that starts at `start` (not cut at 80 characters, nor at the first '@' or '~')."""
    tail = _PATH_END.match(blob, end)
    stop = min(tail.end() if tail else end, start + MAX_PATH)
    path = blob[start:stop].decode("utf-8", "replace").rstrip(".:")
    return path + ("…" if stop == start + MAX_PATH else "")


def _is_doc(name: str) -> bool:
    """Documentation text: Markdown/reST files and the license/readme files a wheel carries."""
    base = name.rsplit("/", 1)[-1].upper()
    stem, _, ext = base.partition(".")
    return (
        ext in ("MD", "RST", "MARKDOWN")
        or ".dist-info/licenses/" in name
        or (stem in _DOC_NAMES and ext in ("", "TXT"))
    )


_DOC_NAMES = frozenset({"README", "LICENSE", "LICENCE", "COPYING", "AUTHORS", "NOTICE", "CHANGELOG", "CHANGES"})


def _metadata_headers(blob: bytes) -> bytes:
    """METADATA without its description (the body after the first blank line, or an old-style
    `Description:` header and its continuation lines): that is the project's README, whose paths are
    usage examples (psutil's `/home/giampaolo/monit.py`), not what a build left behind."""
    head = re.split(rb"\r?\n\r?\n", blob, maxsplit=1)[0]
    return re.sub(rb"(?im)^Description:.*(?:\r?\n[ \t].*)*", b"", head)


def user_path(path: str, project_dir: str, build_dirs: tuple[str, ...]) -> str:
    """A path inside the tool's clean copy of the sources as the user's own file: build compiles in
    <build dir>/<python>/<the project's place in its repository>/ (source_copy), so
    `.../sources/3.12/pkg/csrc/k.cu` is `<project>/csrc/k.cu`. Any other path is returned as is."""
    if not project_dir:
        return path
    for base in (d.rstrip("/") for d in build_dirs if d):
        if not path.startswith(base + "/"):
            continue
        inner = path[len(base) + 1 :].partition("/")[2]  # below the Python's copy
        project = PurePosixPath(project_dir)
        root = next((d for d in (project, *project.parents) if Path(d, ".git").exists()), None)
        if root is None:  # outside git the copy holds the project at its top
            return str(project / inner) if inner else str(project)
        return str(root / inner) if inner else str(root)
    return path


def check_cuda(
    info: cuda_binary.CudaInfo,
    required: tuple[str, ...],
    allow_ptx: bool,
    allow_debug: bool,
    project_dir: str = "",
    build_dirs: tuple[str, ...] = (),
) -> list[Finding]:
    """missing-arch, ptx, debug-info and build-path findings for one CUDA-bearing member. With
    `allow_debug`, the source paths that debug and line info (-G/-lineinfo) carry are allowed too: they
    are what that info is. A path in the tool's clean copy is named as the user's file (user_path)."""
    out, name = [], info.member
    have = ", ".join(info.sass) or "no SASS"
    for arch in required:
        if arch not in info.sass and not (arch.endswith("f") and name.endswith(".cubin") and arch[:-1] in info.sass):
            num = arch.removeprefix("sm_")
            out.append(
                Finding(
                    "missing-arch",
                    "error",
                    name,
                    f"lacks {arch} (has {have}): build with -gencode arch=compute_{num},code={arch}",
                )
            )
    if (info.ptx or info.lto_ir) and not allow_ptx:
        what = ", ".join(info.ptx + info.lto_ir)
        out.append(
            Finding(
                "ptx",
                "error",
                name,
                f"ships PTX/LTO-IR ({what}), i.e. kernel source: build SASS only (code=sm_XX) or set verify.allow_ptx",
            )
        )
    if info.debug and not allow_debug:
        extra = " including the full PTX text (.nv_debug_ptx_txt)" if info.debug_ptx_text else ""
        out.append(
            Finding(
                "debug-info",
                "error",
                name,
                f"carries device debug info{extra}: build without -G/-lineinfo or set verify.allow_debug",
            )
        )
    for arch in archname.named_archs(name):
        if not archname.holds(arch, info.sass):
            out.append(
                Finding(
                    "arch-name",
                    "error",
                    name,
                    f"is named for {arch} but holds {have}: a loader that "
                    f"picks it by name runs the wrong code; rebuild it for {arch} or rename it",
                )
            )
    for path in [] if allow_debug and info.debug else info.source_paths:
        if path.startswith("/") and not path.startswith(SYSTEM_PREFIXES):
            shown = user_path(path, project_dir, build_dirs)
            out.append(
                Finding(
                    "build-path",
                    "error",
                    name,
                    f"embeds the build path of '{shown}': build without -G/-lineinfo, or set verify.allow_debug "
                    "if line info ships on purpose",
                )
            )
            break
    return out
