"""What a build writes beside its wheels, from those wheels (nothing rebuilt): kernel-builder's layout
(`--layout kernels-hub`, hub_layout) and, with `variants.format = "pep825"`, PEP 825 (Draft) variant
wheels and the index's variants.json (pep825_wheel)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release.variants import hub_layout, pep825_wheel

if TYPE_CHECKING:
    from kestrel_release.config.model import Config


def wants_pep825(cfg: Config) -> bool:
    return cfg.variants is not None and cfg.variants.format == "pep825"


def top(out: Path) -> Path:
    """The build output a variant's own folder (`<out>/variants/<name>/`) belongs to: the layouts cover
    every variant of the output, so a variant's build rewrites them from the whole output."""
    return out.parent.parent if out.parent.name == "variants" else out


def write(cfg: Config, result: Any, layout: str | None) -> None:  # result: a BuildResult (no import: a cycle)
    out = top(cfg.out_path)
    if layout:
        result.hub = hub_layout.write(out, cfg.name, cfg.variants is not None)
    if wants_pep825(cfg):
        result.pep825 = pep825_wheel.write(out, cfg.name)


def render(result: Any) -> None:
    if result.hub is not None:
        hub_layout.render(result.hub)
    if result.pep825 is not None:
        pep825_wheel.render(result.pep825)
