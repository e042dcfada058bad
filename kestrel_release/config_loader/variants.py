"""Reading [tool.kestrel-release.variants] (and KESTREL_RELEASE_VARIANTS_*) into a VariantsConfig.

config_parse calls `parse` while it reads the table and `validate` once the whole Config exists (the
CUDA toolkits of the matrix must compile the configured archs). Every problem is one line in the
shared `errors` list, so a bad table ends in config.load's one error (exit 2).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kestrel_release import platforms as platform_registry
from kestrel_release.config.variants import FORMATS, NAMINGS, Exclude, Variant, VariantError, VariantsConfig
from kestrel_release.facts import cuda_rules, pyversions

WHERE = "[tool.kestrel-release.variants]"
ENV_PREFIX = "KESTREL_RELEASE_VARIANTS_"
KEYS = ("torch", "cuda", "default", "exclude", "naming", "format", "index", "python", "platforms", "stable_abi")
# TORCH_TARGET_VERSION (torch/csrc/stable/version.h) and the versioned C shim start with torch 2.10.
STABLE_ABI_FLOOR = (2, 10)
_LISTS = ("torch", "cuda", "python", "platforms")
_EXCLUDE_KEYS = ("torch", "cuda", "os", "arch")


def env_names() -> dict[str, str]:
    """Each variable that overrides a variants key -> its dotted key."""
    return {f"{ENV_PREFIX}{k.upper()}": f"variants.{k}" for k in KEYS}


def parse(
    table: Any,
    env: dict[str, str],
    errors: list[str],
    suggest: Callable[[str, Any], str],
    parse_structured: Callable[[str], Any],
) -> VariantsConfig | None:
    """The table (None when absent) with the environment over it; None when neither gives one.

    `suggest` and `parse_structured` are config_parse's (this module sits below it).
    """
    raw: dict[str, tuple[str, Any]] = {}  # key -> (where it came from, value)
    if table is not None and not isinstance(table, dict):
        errors.append(f"{WHERE}: expected a table")
        table = {}
    for key, value in (table or {}).items():
        if key not in KEYS:
            errors.append(f"{WHERE}.{key}: unknown key{suggest(key, KEYS)}")
            continue
        raw[key] = (f"{WHERE}.{key}", value)
    for var, dotted in env_names().items():
        if var in env:
            text = env[var]
            given: Any = text
            if dotted.endswith(_LISTS):
                given = parse_structured(text) if text.lstrip().startswith("[") else _split(text)
            elif dotted.endswith(("default", "exclude", "index")):
                given = parse_structured(text)
            raw[dotted.split(".", 1)[1]] = (var, given)
    if table is None and not raw:
        return None
    stable = _stable_abi(*raw.get("stable_abi", (f"{WHERE}.stable_abi", "")), errors)
    if stable and "torch" not in raw:  # built against the target's own torch unless told otherwise
        raw["torch"] = (f"{WHERE}.stable_abi", [stable])
    if "torch" not in raw:
        errors.append(f'{WHERE}: `torch` is missing (e.g. torch = ["2.12", "2.13"], cuda = ["12.6", "13.0"])')
    n_errors = len(errors)
    torch = _torch_list(*raw.get("torch", (f"{WHERE}.torch", [])), errors)
    pairs: tuple[Exclude, ...] = ()
    cuda: tuple[str, ...] = ()
    if "cuda" in raw:
        cuda = _cuda_list(*raw["cuda"], errors)
    elif len(errors) == n_errors and torch:
        cuda, pairs = _pypi_cuda(torch, errors)
    naming = _choice(*raw.get("naming", (f"{WHERE}.naming", "local")), NAMINGS, errors, suggest)
    fmt = _choice(*raw.get("format", (f"{WHERE}.format", "wheel")), FORMATS, errors, suggest)
    exclude = _excludes(*raw.get("exclude", (f"{WHERE}.exclude", [])), torch, cuda, errors) + pairs
    index = _index(*raw.get("index", (f"{WHERE}.index", {})), cuda, errors)
    python = _strings(*raw.get("python", (f"{WHERE}.python", [])), errors)
    for py in python:
        if (why := pyversions.problem(py)) is not None:
            errors.append(f"{raw['python'][0]}: {why}")
    platforms = _strings(*raw.get("platforms", (f"{WHERE}.platforms", [])), errors)
    where_plat = raw.get("platforms", (f"{WHERE}.platforms",))[0]
    errors += [f"{where_plat}{p[len('platforms') :]}" for p in platform_registry.problems(platforms)]
    if stable:
        _stable_torch(raw["torch"][0], torch, stable, errors)
        if fmt == "pep825":  # its labels name one torch version; a stable-ABI wheel serves a range
            errors.append(
                f"{WHERE}.format: 'pep825' labels each wheel with one torch minor; with stable_abi use 'wheel'"
            )
    cfg = VariantsConfig(torch, cuda, None, exclude, naming, fmt, index, python, platforms, stable)
    if len(errors) > n_errors or not torch or not cuda:
        return cfg
    matrix = cfg.matrix()
    if not matrix:
        errors.append(f"{WHERE}.exclude: excludes every variant of torch x cuda; nothing is left to build")
        return cfg
    where_default, default_raw = raw.get("default", (f"{WHERE}.default", None))
    default = _default(where_default, default_raw, cfg, errors)
    cfg = VariantsConfig(torch, cuda, default, exclude, naming, fmt, index, python, platforms, stable)
    if naming == "package-suffix" or stable:
        _one_per_major(cfg, errors)
    return cfg


def _stable_abi(where: str, value: Any, errors: list[str]) -> str:
    """`stable_abi = "2.10"`: the torch minor a stable-ABI build targets ("" when not set)."""
    if value in ("", None):
        return ""
    if not isinstance(value, str):  # TOML reads stable_abi = 2.10 as the float 2.1
        errors.append(f'{where}: {value!r} is not a string; write the torch minor quoted: stable_abi = "2.10"')
        return ""
    text = value.strip()
    if not re.fullmatch(r"\d+\.\d+", text):
        errors.append(f'{where}: {value!r} is not a torch minor like "2.10" (the oldest torch the wheel loads on)')
        return ""
    if tuple(int(p) for p in text.split(".")) < STABLE_ABI_FLOOR:
        errors.append(
            f"{where}: torch {text} has no stable ABI to target (TORCH_TARGET_VERSION starts with torch 2.10); "
            'use stable_abi = "2.10" or later'
        )
        return ""
    return text


def _stable_torch(where: str, torch: tuple[str, ...], stable: str, errors: list[str]) -> None:
    """A stable-ABI build compiles once, against one torch no older than its target."""
    if len(torch) > 1:
        errors.append(
            f"{where}: a stable-ABI build compiles against one torch ({', '.join(torch)} given); name one, "
            f"at least {stable}, or leave torch out to build against {stable}"
        )
    elif torch and _minor(torch[0]) < _minor(stable):
        errors.append(
            f"{where}: torch {torch[0]} is older than stable_abi {stable}: the build's torch must have the "
            f'target\'s headers; use torch = ["{stable}"] or later'
        )


def _pypi_cuda(torch: tuple[str, ...], errors: list[str]) -> tuple[tuple[str, ...], tuple[Exclude, ...]]:
    """No `cuda`: each torch minor builds against the CUDA of its own PyPI wheels (read from PyPI's
    metadata, cached: adapters/pypi/torch_cuda.py). (the CUDAs, the excludes that pair each torch with
    its own alone)."""
    from kestrel_release.adapters.pypi import torch_cuda
    from kestrel_release.files import statedir

    known = torch_cuda.pypi_cuda(list(torch), statedir.cache_dir(), torch_cuda.root())
    missing = [t for t in torch if t not in known]
    if missing:
        errors.append(
            f"{WHERE}: `cuda` is not given and the CUDA of PyPI's torch {', '.join(missing)} could not be read "
            f'from {torch_cuda.root()}: list the CUDAs to build (e.g. cuda = ["13.0"])'
        )
        return (), ()
    cuda = tuple(sorted(set(known.values()), key=_minor))
    return cuda, tuple(Exclude(torch=t, cuda=c) for t in torch for c in cuda if known[t] != c)


def validate(cfg: Any, errors: list[str], at: Callable[[str], str]) -> None:
    """Checks that need the whole Config: each variant's toolkit compiles every configured arch."""
    v = cfg.variants
    if v is None:
        return
    for toolkit in v.cuda:
        problems = cuda_rules.pairs((toolkit,), cfg.cuda_arch)[1]
        errors += [f"{at('variants.cuda')}: {p}" for p in problems if "which is not in cuda" not in p]


def _split(text: str) -> list[str]:
    return [p for p in re.split(r"[,;\s]+", text) if p]


def _strings(where: str, value: Any, errors: list[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = _split(value)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(f"{where}: expected a list of strings, got {value!r}")
        return ()
    seen = [v.strip() for v in value]
    dups = sorted({v for v in seen if seen.count(v) > 1})
    if dups:
        errors.append(f"{where}: {', '.join(dups)} listed twice")
    return tuple(dict.fromkeys(seen))


def _torch_list(where: str, value: Any, errors: list[str]) -> tuple[str, ...]:
    out = []
    for text in _strings(where, value, errors):
        if not re.fullmatch(r"\d+\.\d+", text):
            errors.append(f"{where}: '{text}' is not a torch minor like 2.13 (a variant pins torch==2.13.*)")
            continue
        out.append(text)
    return tuple(out)


def _cuda_name(text: str) -> str:
    """'13' and '13.0.2' -> '13.0' (a variant is one toolkit minor); ArchError otherwise."""
    return cuda_rules.toolkit_name(cuda_rules.parse_toolkit(text))


def _cuda_list(where: str, value: Any, errors: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for text in _strings(where, value, errors):
        try:
            name = _cuda_name(text)
        except cuda_rules.ArchError as exc:
            errors.append(f"{where}: {exc}")
            continue
        if name in out:
            errors.append(f"{where}: '{text}' is CUDA {name}, listed twice")
            continue
        out.append(name)
    return tuple(out)


def _choice(
    where: str, value: Any, choices: tuple[str, ...], errors: list[str], suggest: Callable[[str, Any], str]
) -> str:
    if isinstance(value, str) and value in choices:
        return value
    errors.append(f"{where}: {value!r} is not one of {', '.join(choices)}{suggest(str(value), choices)}")
    return choices[0]


def _excludes(
    where: str, value: Any, torch: tuple[str, ...], cuda: tuple[str, ...], errors: list[str]
) -> tuple[Exclude, ...]:
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        errors.append(f'{where}: expected a list of tables like [{{torch = "2.12", cuda = "12.6"}}], got {value!r}')
        return ()
    out = []
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(item, dict) or not item or not all(isinstance(v, str) for v in item.values()):
            errors.append(f'{at}: expected a table of strings like {{torch = "2.12", cuda = "12.6"}}, got {item!r}')
            continue
        bad = sorted(set(item) - set(_EXCLUDE_KEYS))
        if bad:
            errors.append(f"{at}.{bad[0]}: unknown key (an exclude takes {', '.join(_EXCLUDE_KEYS)})")
            continue
        fields = dict(item)
        if "cuda" in fields:
            try:
                fields["cuda"] = _cuda_name(fields["cuda"])
            except cuda_rules.ArchError as exc:
                errors.append(f"{at}.cuda: {exc}")
                continue
        listed = {"torch": torch, "cuda": cuda, "os": platform_registry.systems()}
        wrong = [k for k, options in listed.items() if k in fields and fields[k] not in options]
        if wrong:
            k = wrong[0]
            errors.append(
                f"{at}.{k}: '{item[k]}' is not in {k} ({', '.join(listed[k]) or 'empty'}): it excludes nothing"
            )
            continue
        out.append(Exclude(**fields))
    return tuple(out)


def _index(where: str, value: Any, cuda: tuple[str, ...], errors: list[str]) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        errors.append(f'{where}: expected a table of CUDA -> index URL like {{"13.0" = "https://..."}}, got {value!r}')
        return {}
    out = {}
    for key, url in value.items():
        try:
            name = _cuda_name(str(key))
        except cuda_rules.ArchError as exc:
            errors.append(f"{where}.{key}: {exc}")
            continue
        if name not in cuda:
            errors.append(f"{where}.{key}: CUDA {name} is not in cuda ({', '.join(cuda) or 'empty'})")
            continue
        if not re.match(r"(https?|file)://\S+$", url):
            errors.append(f"{where}.{key}: '{url}' is not an index URL (https://..., or file:// for a directory)")
            continue
        out[name] = url.rstrip("/")
    return out


def _default(where: str, value: Any, cfg: VariantsConfig, errors: list[str]) -> Variant | None:
    """The variant PyPI gets: the one named, else the newest torch with the newest CUDA."""
    matrix = cfg.matrix()
    if value is None:
        newest = Variant(max(cfg.torch, key=_minor), max(cfg.cuda, key=_minor), stable_abi=cfg.stable_abi)
        if newest in matrix:
            return newest
        errors.append(
            f"{where}: not set and the newest pair (torch {newest.torch}, CUDA {newest.cuda}) is excluded; "
            f'name the one PyPI gets, e.g. default = {{torch = "{matrix[-1].torch}", cuda = "{matrix[-1].cuda}"}}'
        )
        return None
    if isinstance(value, str):
        try:
            hit = cfg.select((value,))
        except VariantError as exc:
            errors.append(f"{where}: {str(exc).replace('--variant ', '')}")
            return None
        if len(hit) == 1:
            return hit[0]
        errors.append(f"{where}: {value!r} names {len(hit)} variants; name one (torch and cuda)")
        return None
    if not isinstance(value, dict) or set(value) != {"torch", "cuda"}:
        errors.append(f'{where}: expected {{torch = "2.13", cuda = "13.0"}}, got {value!r}')
        return None
    try:
        chosen = Variant(str(value["torch"]), _cuda_name(str(value["cuda"])), stable_abi=cfg.stable_abi)
    except cuda_rules.ArchError as exc:
        errors.append(f"{where}.cuda: {exc}")
        return None
    if chosen not in matrix:
        why = "excluded" if chosen.torch in cfg.torch and chosen.cuda in cfg.cuda else "not in torch x cuda"
        errors.append(
            f"{where}: torch {chosen.torch} with CUDA {chosen.cuda} is {why}; "
            f"choose one of {', '.join(f'{v.torch}/{v.cuda}' for v in matrix)}"
        )
        return None
    return chosen


def _one_per_major(cfg: VariantsConfig, errors: list[str]) -> None:
    """package-suffix gives one project per CUDA major (`<name>-cu13`) with the plain version, so two
    variants of one major would ship the same filename; a stable-ABI build is one per CUDA major too
    (a binary of CUDA 13.0 loads with every 13.x runtime: a second 13.x build is the same wheel again)."""
    by_major: dict[int, list[Variant]] = {}
    for v in cfg.matrix():
        by_major.setdefault(v.cuda_major, []).append(v)
    for major, vs in sorted(by_major.items()):
        if len(vs) > 1:
            names = ", ".join(f"torch {v.torch}/CUDA {v.cuda}" for v in vs)
            if cfg.stable_abi:
                errors.append(
                    f"{WHERE}.cuda: a stable-ABI build is one wheel per CUDA major, and {', '.join(v.cuda for v in vs)} "
                    f"are all CUDA {major}; keep the oldest ({min((v.cuda for v in vs), key=_minor)}: it loads with "
                    f"every CUDA {major}.x)"
                )
                continue
            errors.append(
                f"{WHERE}.naming: 'package-suffix' names one project per CUDA major, and {names} would all be "
                f"<name>-cu{major} with one version (the same filenames); exclude all but one, or use naming = 'local'"
            )


def _minor(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))
