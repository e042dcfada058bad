"""The `[tool.kestrel-release]` table `init` writes, as commented TOML (tomlkit).

Kept apart from init.py so the choices (init.choose) and their rendering can change
independently; tests parse the text back and compare it with the plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tomlkit.items import Item

    from kestrel_release.flows.init.choose import Plan
    from kestrel_release.flows.init.detect import Detected


def table_text(plan: Plan, d: Detected) -> str:
    """The [tool.kestrel-release] table as TOML text, with a comment on each choice."""
    import tomlkit

    top = tomlkit.table()
    top.add(tomlkit.comment("Written by `kestrel-release init`. Detected:"))
    for line in _summary(d):
        top.add(tomlkit.comment(f"  {line}"))
    top.add(tomlkit.comment("The defaults already keep torch and CUDA runtime libraries (libtorch*, libc10*,"))
    top.add(
        tomlkit.comment("libcudart*, ...) out of the wheel: add to build.exclude only what else must not be grafted.")
    )
    for key, value in plan.values.items():
        if isinstance(value, dict):
            sub = tomlkit.table()
            for k, val in value.items():
                sub.add(k, _commented(_item(val), plan.comments.get(f"{key}.{k}")))
            top.add(key, sub)
        else:
            top.add(key, _commented(_item(value), plan.comments.get(key)))
    doc = tomlkit.document()
    tool = tomlkit.table(is_super_table=True)
    tool.add("kestrel-release", top)
    doc.add("tool", tool)
    return tomlkit.dumps(doc)


def _commented(item: Item, comment: str | None) -> Item:
    # On the item before it is added: reading a bool back from a table gives a plain bool.
    if comment:
        item.comment(comment)
    return item


def _item(value: Any) -> Item:
    import tomlkit

    if isinstance(value, dict):  # build.env: one line, `env = { KEY = "value" }`
        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    if isinstance(value, list) and value and isinstance(value[0], dict):
        arr = tomlkit.array()
        for entry in value:
            inline = tomlkit.inline_table()
            for k, val in entry.items():
                # Literal strings: a pattern full of double quotes stays readable (one line only:
                # a pattern spanning lines is a basic string with its \n escaped).
                inline[k] = tomlkit.string(val, literal="'" not in val and "\n" not in val)
            arr.append(inline)
        return arr.multiline(True) if len(value) > 1 else arr
    if isinstance(value, list):
        arr = tomlkit.array()
        arr.extend(tomlkit.string(v) for v in value)
        return arr.multiline(True) if len(value) > 4 else arr
    return tomlkit.item(value)


def _summary(d: Detected) -> list[str]:
    lines = [
        f"backend: {d.backend} ({d.backend_spec or 'none declared'}"
        + ("; an in-tree backend over setuptools)" if d.wraps_setuptools else ")"),
        f"name: {d.name or '?'} (from {d.name_source}); version: {d.version or '?'} (from {d.version_source})",
    ]
    also = [path for path, _ in d.version_files if path != d.version_source]
    if also:
        lines.append("the version is also written in: " + ", ".join(dict.fromkeys(also)))
    if d.native:
        lines.append("native code: " + "; ".join(d.native))
    if d.cuda:
        lines.append("CUDA: " + "; ".join(d.cuda) + ("; links torch" if d.torch else ""))
    if d.compiled and d.compiled.archs:
        archs = ", ".join(f"sm_{a}" for a in d.compiled.names())
        lines.append(f"compiles {archs} (the {d.compiled.source} list at {d.compiled.at})")
    if d.abi3:
        lines.append(f"limited API: {d.abi3}" if d.abi3 != "py3" else "py3 wheel")
    if d.requires_python:
        lines.append(f"requires-python: {d.requires_python}")
    return lines
