"""A torch extension that links torch without requiring it (chamferdist 1.0.3): the smoke test installs the
torch minor the release was built against beside it, as its users must; any other wheel is left as it is."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.config_loader import load as config
from kestrel_release.stages.publish import smoke, smoke_torch
from tests import factories


def _cfg(tmp_path: Path, torch: object | None):
    project = factories.make_project(tmp_path / "proj")
    cfg = config.load(project)
    fields: dict = {"package": factories.NAME, "version": "0.1.0", "wheels": []}
    if torch is not None:
        fields["toolchain"] = {"torch": torch, "nvcc": "13.0.88"}
    cfg.out_path.mkdir(parents=True, exist_ok=True)
    factories.save_manifest(cfg.out_path, fields)
    return cfg


def _child(says: str):
    calls: list[list] = []

    def run(argv: list) -> str:
        calls.append(argv)
        return says

    return run, calls


def test_a_wheel_linking_torch_without_requiring_it_gets_the_built_torch_minor(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, {"version": "2.13.0+cu130", "cuda": "13.0"})
    run, calls = _child("KESTREL-LINKS-TORCH\n")
    got = smoke_torch.missing_torch(cfg, Path("venv/bin/python"), "chamferdist", ["numpy>=1.20"], run)
    assert got == "torch==2.13.*"
    assert calls and calls[0][-1] == "chamferdist"


def test_a_wheel_that_requires_torch_or_does_not_link_it_gets_nothing(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, {"version": "2.13.0+cu130"})
    run, calls = _child("KESTREL-LINKS-TORCH\n")
    for wanted in (["torch>=2.1"], ["Torch ; python_version >= '3.9'"]):
        assert smoke_torch.missing_torch(cfg, Path("py"), "pkg", wanted, run) is None
    assert calls == []  # a declared torch is never second-guessed: no child at all
    quiet, _ = _child("")
    assert smoke_torch.missing_torch(cfg, Path("py"), "pkg", [], quiet) is None  # pure Python, or no torch link


def test_without_a_known_build_torch_nothing_is_guessed(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, None)
    run, calls = _child("KESTREL-LINKS-TORCH\n")
    assert smoke_torch.missing_torch(cfg, Path("py"), "pkg", [], run) is None
    assert calls == []


def test_the_summary_says_what_was_installed_first() -> None:
    rows = [{"python": "3.12", "ok": True, "undeclared": "torch==2.13.*", "reused": [], "command": None}]
    text = smoke.summary(rows, "testpypi")
    assert "torch==2.13.* installed first" in text and "does not require it" in text
    assert "installed first" not in smoke.summary([{**rows[0], "undeclared": None}], "testpypi")
