"""The layouts a build writes beside its wheels cover the whole output, whichever variant's build writes them."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.stages.build import extras


def test_a_variant_folder_belongs_to_its_output() -> None:
    assert extras.top(Path("/p/dist-all/variants/torch213-cxx11-cu130-x86_64-linux")) == Path("/p/dist-all")
    assert extras.top(Path("/p/dist-all")) == Path("/p/dist-all")
