"""What a package really compiles for CUDA: the archs and flags its own build files pass to nvcc.

torch's cpp_extension adds `-gencode` flags for TORCH_CUDA_ARCH_LIST only when the extension passes
none of its own (`extra_compile_args={"nvcc": ["-gencode", ...]}`), and CMake's
`CMAKE_CUDA_ARCHITECTURES`/`CUDA_ARCHITECTURES` win over the CUDAARCHS variable. So `cuda_arch` and a
`build.env` arch list promise nothing when setup.py or CMakeLists.txt hard-codes the list. init writes
its table from what is read here, and doctor reconciles the table with it before any build.

Reading only: setup.py as an AST (never executed), CMake files as text, plus `build.env`. An arch
appended under an `if` (a toolkit-version test) is `conditional`: present only with some toolkits.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from kestrel_release.facts import cuda_rules

_GENCODE = re.compile(
    r"arch\s*=\s*compute_(?P<virt>\d+[af]?)\s*,\s*code\s*=\s*(?P<code>\[[^\]]*\]|\"[^\"]*\"|'[^']*'|[\w,]+)"
)
_ARCH_FLAG = re.compile(r"(?:^|\s)(?:-arch|--gpu-architecture)[=\s]+(?P<arch>(?:sm|compute)_\d+[af]?)")
_CODE = re.compile(r"\b(sm|compute)_(\d+[af]?)\b")
_CMAKE_ARCHS = re.compile(
    r"(?:set\s*\(\s*CMAKE_CUDA_ARCHITECTURES|\bCUDA_ARCHITECTURES)\s+\"?(?P<list>[0-9][0-9A-Za-z_;\s-]*)",
    re.IGNORECASE,
)
_CMAKE_GENERATORS = ("Ninja", "Unix Makefiles", "Ninja Multi-Config", "NMake Makefiles")
ARCH_ENV = ("TORCH_CUDA_ARCH_LIST", "CUDAARCHS")


@dataclass(frozen=True)
class Place:
    path: str  # relative to the project ("setup.py", "CMakeLists.txt", "build.env")
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass
class Compiled:
    """The package's own CUDA build settings; `archs` is empty when nothing fixes them."""

    archs: list[cuda_rules.Arch] = field(default_factory=list)  # SASS the build emits, in file order
    ptx: list[cuda_rules.Arch] = field(default_factory=list)  # PTX it embeds
    conditional: list[cuda_rules.Arch] = field(default_factory=list)  # archs added under an `if`
    source: str = ""  # what fixes them: "-gencode", "TORCH_CUDA_ARCH_LIST", "CUDA_ARCHITECTURES"
    at: Place | None = None  # the file and line of that list
    ignored: list[str] = field(default_factory=list)  # arch settings the build does not read, with why
    debug: list[tuple[str, Place]] = field(default_factory=list)  # ("-lineinfo", setup.py:12)
    cuda_home: tuple[str, Place] | None = None  # CUDA_HOME set by setup.py or build.env
    computed: Place | None = None  # a -gencode list built from f-strings: not readable

    @property
    def hard_coded(self) -> bool:
        """The build passes its own arch flags, so TORCH_CUDA_ARCH_LIST/CUDAARCHS are ignored."""
        return self.source in ("-gencode", "CUDA_ARCHITECTURES")

    def names(self, *, conditional: bool = True) -> list[str]:
        keep = [a for a in self.archs if conditional or a not in self.conditional]
        return [a.name for a in sorted(dict.fromkeys(keep))]


def read(project_dir: Path, env: dict[str, str]) -> Compiled:
    """What the package compiles, from setup.py, its CMake files and the build environment `env`."""
    out = Compiled()
    _setup_py(out, project_dir / "setup.py")
    if not out.source:
        for path in cmake_files(project_dir):
            _cmake(out, path, path.relative_to(project_dir).as_posix())
    _env(out, env)
    return out


def cmake_files(root: Path) -> list[Path]:
    found = [root / "CMakeLists.txt", *sorted(root.glob("cmake/*.cmake")), *sorted(root.glob("*/CMakeLists.txt"))]
    return [p for p in found if p.is_file()]


def string_constants(tree: ast.AST) -> list[tuple[str, int, bool]]:
    """Every string constant (text, line, whether a version test guards it), in source order."""
    found: list[tuple[int, int, str, bool]] = []

    def visit(node: ast.AST, gated: bool) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.col_offset, node.value, gated))
        # Only a version test makes an arch conditional (`if nvcc_version >= Version("12.8")`): a
        # package guards its whole CUDA build with other tests (`if not SKIP_CUDA_BUILD`).
        test = node.test if isinstance(node, ast.If | ast.IfExp) else None
        inner = gated or (test is not None and "version" in ast.unparse(test).lower())
        for child in ast.iter_child_nodes(node):
            visit(child, gated if child is test else inner)

    visit(tree, False)
    return [(text, line, gated) for line, _col, text, gated in sorted(found, key=lambda f: f[:2])]


def _setup_py(out: Compiled, path: Path) -> None:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return
    strings = string_constants(tree)
    for i, (text, line, gated) in enumerate(strings):
        place = Place("setup.py", line)
        following = strings[i + 1][0] if i + 1 < len(strings) else ""
        tokens = text.split()
        if "-lineinfo" in tokens or (tokens == ["-G"] and following not in _CMAKE_GENERATORS):
            out.debug.append(("-lineinfo" if "-lineinfo" in tokens else "-G", place))
        found = _flag_archs(text, following if text.strip() in ("-arch", "--gpu-architecture") else "")
        if found:
            _add(out, found, "-gencode", place, conditional=gated)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and "arch=compute_" in ast.unparse(node) and not out.source:
            out.computed = out.computed or Place("setup.py", node.lineno)
        key, value = _environ_set(node)
        line = getattr(node, "lineno", 0)
        if key == "CUDA_HOME" and value is not None:
            out.cuda_home = (value, Place("setup.py", line))
        elif key == "TORCH_CUDA_ARCH_LIST" and value is not None and not out.source:
            out.source, out.at = "TORCH_CUDA_ARCH_LIST", Place("setup.py", line)
            _add_list(out, value)


Found = list[tuple[cuda_rules.Arch, bool]]  # (arch, is SASS): False is PTX


def _flag_archs(text: str, following: str) -> Found:
    """(arch, is SASS) of the -gencode/--generate-code/-arch flags in one string."""
    pairs: list[tuple[str, bool]] = []
    for m in _GENCODE.finditer(text):
        pairs += [(num, kind == "sm") for kind, num in _CODE.findall(m.group("code"))]
    arches = [m.group("arch") for m in _ARCH_FLAG.finditer(text)]
    if following and re.fullmatch(r"(?:sm|compute)_\d+[af]?", following):
        arches.append(following)
    for name in arches:  # -arch=sm_80 is SASS for sm_80 plus its PTX
        num = name.split("_")[1]
        pairs += [(num, True), (num, False)] if name.startswith("sm_") else [(num, False)]
    return _parsed(pairs)


def _parsed(pairs: list[tuple[str, bool]]) -> Found:
    return [(arch, sass) for num, sass in pairs if (arch := _arch(num)) is not None]


def _arch(text: str) -> cuda_rules.Arch | None:
    try:
        return cuda_rules.Arch.parse(text)
    except cuda_rules.ArchError:
        return None


def _add(out: Compiled, found: Found, source: str, place: Place, *, conditional: bool = False) -> None:
    if not out.source:
        out.source, out.at = source, place
    for arch, sass in found:
        (out.archs if sass else out.ptx).append(arch)
        if conditional and sass:
            out.conditional.append(arch)


def _add_list(out: Compiled, value: str) -> None:
    """A TORCH_CUDA_ARCH_LIST value: "8.0;9.0a", "8.6+PTX 9.0"."""
    for entry in re.split(r"[;,\s]+", value.strip()):
        arch = _arch(entry.removesuffix("+PTX"))
        if arch is not None:
            out.archs.append(arch)
            if entry.endswith("+PTX"):
                out.ptx.append(arch)


def _environ_set(node: ast.AST) -> tuple[str | None, str | None]:
    """`os.environ["K"] = "v"` or `os.environ.setdefault("K", "v")`: (K, v)."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        if isinstance(target, ast.Subscript) and ast.unparse(target.value).endswith("environ"):
            return _const(target.slice), _const(node.value)
    if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("environ.setdefault") and len(node.args) == 2:
        return _const(node.args[0]), _const(node.args[1])
    return None, None


def _const(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _cmake(out: Compiled, path: Path, rel: str) -> None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for m in _GENCODE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        found = _parsed([(num, kind == "sm") for kind, num in _CODE.findall(m.group("code"))])
        _add(out, found, "-gencode", Place(rel, line))
    if out.source:
        return
    for m in _CMAKE_ARCHS.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        for entry in re.split(r"[;\s]+", m.group("list").strip()):
            arch = _arch(entry.removesuffix("-real").removesuffix("-virtual"))
            if arch is not None:
                sass, ptx = not entry.endswith("-virtual"), not entry.endswith("-real")
                _add(out, [(arch, True)] * sass + [(arch, False)] * ptx, "CUDA_ARCHITECTURES", Place(rel, line))


def _env(out: Compiled, env: dict[str, str]) -> None:
    if "CUDA_HOME" in env and out.cuda_home is None:
        out.cuda_home = (env["CUDA_HOME"], Place("build.env"))
    for key in ARCH_ENV:
        if key not in env:
            continue
        if out.source:
            where = f"{out.at} passes its own {out.source} list" if out.at else "the build sets its own list"
            out.ignored.append(f"build.env {key} is ignored: {where}")
        else:
            out.source, out.at = key, Place("build.env")
            _add_list(out, env[key])


def reconcile(cuda_arch: tuple[str, ...], cuda: tuple[str, ...], got: Compiled) -> tuple[str, str, str] | None:
    """(status, detail, fix) where the table and the package disagree; None when they agree or the
    package fixes no list. One row: the first disagreement, with the one edit that fixes it."""
    if not got.archs:
        return None
    built = set(got.archs)
    wanted = [t.arch for t in map(_target, cuda_arch) if t is not None]
    missing = [a for a in wanted if not any(cuda_rules.serves(b, a) for b in built)]
    where = f"{got.at} ({got.source})" if got.at else got.source
    listed = ", ".join(a.sm for a in sorted(dict.fromkeys(got.archs)))
    if missing:
        names = ", ".join(a.sm for a in missing)
        fix = f"set cuda_arch = {_toml(got.names())} in pyproject.toml (the list at {got.at or got.source})"
        return "fail", f"cuda_arch asks for {names}, but {where} compiles only {listed}", fix
    for toolkit in cuda:
        unbuildable = [
            a
            for a in dict.fromkeys(got.archs)
            if a not in got.conditional and cuda_rules.cannot_compile(cuda_rules.parse_toolkit(toolkit), a)
        ]
        if unbuildable:
            names = ", ".join(a.sm for a in unbuildable)
            return (
                "fail",
                f"CUDA {toolkit} (cuda) cannot compile {names}, which {where} asks for",
                f"drop {names} from the list at {where}, or set cuda to a toolkit that compiles them",
            )
    if got.ignored:
        return "warn", f"{got.ignored[0]} ({listed})", f"remove it from build.env; the arch list lives at {where}"
    return None


def _target(text: str) -> cuda_rules.Target | None:
    try:
        return cuda_rules.parse_target(text)
    except cuda_rules.ArchError:
        return None


def _toml(names: list[str]) -> str:
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"
