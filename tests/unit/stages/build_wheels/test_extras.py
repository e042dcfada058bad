"""The layouts a build writes beside its wheels cover the whole output, whichever variant's build writes them."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.stages.build_wheels import extras


def test_a_variant_folder_belongs_to_its_output() -> None:
    assert extras.top(Path("/p/dist-all/variants/torch213-cxx11-cu130-x86_64-linux")) == Path("/p/dist-all")
    assert extras.top(Path("/p/dist-all")) == Path("/p/dist-all")


def test_a_variants_build_writes_the_layout_once_for_every_variant(tmp_path: Path, monkeypatch) -> None:
    """run_variants: each variant's `run` writes no layout; the whole output's is written after the last one."""
    from kestrel_release.config import model as config_model
    from kestrel_release.config.variants import Variant, VariantsConfig
    from kestrel_release.stages import build_wheels as build
    from kestrel_release.stages.build_wheels import variant_build
    from tests.factories import NAME, save_manifest, write_wheel

    out = tmp_path / "dist-all"
    for torch, cuda in (("2.13", "13.0"), ("2.12", "12.6")):
        folder = out / "variants" / Variant(torch, cuda).name
        wheel = write_wheel(folder, NAME, "0.1.0", "cp312-cp312-manylinux_2_28_x86_64")
        save_manifest(
            folder,
            {
                "package": NAME,
                "version": "0.1.0",
                "wheels": [{"filename": wheel.name, "variant": {"torch": torch, "cuda": cuda}}],
            },
        )
    seen: dict = {}

    def fake_run(cfg, selectors, one_build, **kwargs):
        seen.update(kwargs)
        return variant_build.VariantsResult(out, [], [])

    monkeypatch.setattr(variant_build, "run", fake_run)
    cfg = config_model.Config(
        project_dir=tmp_path,
        name=NAME,
        version="0.1.0",
        out_dir="dist-all",
        variants=VariantsConfig(torch=("2.12", "2.13"), cuda=("12.6", "13.0")),
    )
    matrix = build.run_variants(cfg, (), layout="kernels-hub", use_cache=True)
    assert "layout" not in seen  # each variant's build leaves it to the end
    assert [v.name for v in matrix.hub.variants] == [Variant("2.12", "12.6").name, Variant("2.13", "13.0").name]
    assert matrix.to_json()["hub"]["layout"] == "kernels-hub"
