"""Every command's --json document, full and minimal, fits its published schema (docs/reference/schemas/):
the optional parts the integration tests do not all reach (hub, PEP 825, the size plan, a variant left for
another machine, a stable-ABI answer, a GPU with nothing to load) included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kestrel_release.adapters.static_index import PageResult
from kestrel_release.config.variants import Variant
from kestrel_release.flows.doctor_report import Check, DoctorReport
from kestrel_release.flows.explain.images import Choice, Image
from kestrel_release.flows.explain.result import ExplainReport, GpuResult
from kestrel_release.flows.explain.torch import TorchAnswer
from kestrel_release.flows.init import InitResult
from kestrel_release.flows.init.choose import Plan
from kestrel_release.flows.init.detected import Detected
from kestrel_release.flows.release.result import ReleaseResult, StepResult
from kestrel_release.records import documents
from kestrel_release.stages.assemble import AssembleResult
from kestrel_release.stages.build_wheels import BuildResult
from kestrel_release.stages.build_wheels.platforms import PlatformPlan
from kestrel_release.stages.build_wheels.precompile import PrecompileResult
from kestrel_release.stages.build_wheels.size_plan import Lever, Limit, SizePlan
from kestrel_release.stages.build_wheels.variant_build import Outcome, VariantsResult
from kestrel_release.stages.version.result import VersionResult
from kestrel_release.targets.static_index.publish import StaticIndexResult
from kestrel_release.ui import progress
from kestrel_release.variants.hub_layout import HubLayout, HubVariant
from kestrel_release.variants.pep825_wheel import Pep825Result

SCHEMAS = Path(__file__).resolve().parents[3] / "docs" / "reference" / "schemas"
OUT = Path("/o")
HUB = HubLayout(OUT, [HubVariant("torch213-cxx11-cu130-x86_64-linux", "k", "k", ["k.whl"], ["sm_90a"], 3, True)])
PEP825 = Pep825Result(OUT, ["k.whl"], "k-1.0-variants.json", ["cu130"])
SIZES = SizePlan(
    [{"filename": "k.whl", "size": 10}],
    [Limit("per-file limit", 5, "file"), Limit("project limit", 100, "release")],
    [Lever("drop sm_80", "drop-arch", 3, 4, "measured", "", True)],
)
STEPS = [progress.Step("build", "ok", 1.0, 2.345, "2 wheels"), progress.Step("repair")]
LEFT = [{"platform": "win-amd64", "python": "3.12", "why": "needs a windows x86_64 machine"}]
IMAGE = Image("k/_a.so", "sass", "sm_90a", "13.0", False)
NO_IMAGE = Choice("k/_b.so", ["k/_b.so"], None, why=["nothing runs on sm_89"], fix="build for this GPU")
DETECTED = Detected(OUT, name="k", version="1.0", version_files=[("k/__init__.py", "{version}")], packages={"k": "k"})


def _documents() -> list[tuple[str, Any]]:
    compiled = PrecompileResult("compiled", "key", 1.5, OUT / "log", [{"name": "k"}], [{"toolkit": "13.0"}])
    return [
        ("version", VersionResult("bump", "k", "1.0", "1.1", ["pyproject.toml"], False, "-1.0\n+1.1", "abc", "v1.1")),
        ("version", VersionResult("show", "k", "1.0", "1.0")),
        ("doctor", DoctorReport([Check("GPU", "warn", "none", "run on a GPU host"), Check("git", "ok", "2.43")])),
        ("explain", ExplainReport("3.12", "linux_x86_64", "d", "k.whl", candidates=["k.whl"], unreadable=["x"],
                                  gpus=[GpuResult("sm_90", "H100", "580.65.06",
                                                  [Choice("k/_a.so", ["k/_a.so"], IMAGE, "exact"), NO_IMAGE])])),
        ("explain", ExplainReport("3.9", "linux_x86_64", "d", why="no wheel for Python 3.9", fix="build it")),
        ("explain-torch", TorchAnswer("2.13", "sm_90", "linux_x86_64", "k", {"name": "v"}, "pypi", "pip", "uv",
                                      considered=[{"variant": "v", "why": "x"}], loads_on="torch>=2.10")),
        ("explain-torch", TorchAnswer("2.11", None, "linux_x86_64", "k", why="not in the matrix", fix="add it")),
        ("init", InitResult(OUT, DETECTED, Plan({"python": ["3.12"]}, notes=["n"]), gitignore_added=["/dist-all/"],
                            written=["pyproject.toml"], github_repo="acme/k")),
        ("init", InitResult(OUT, Detected(OUT, configured=True), None)),
        ("build", BuildResult(OUT, [{"filename": "k.whl"}], compiled, STEPS, 3.14159, OUT / "logs", ["w"], True,
                              PlatformPlan(("linux-x86_64", "win-amd64"), "linux-x86_64", LEFT), HUB, PEP825, SIZES)),
        ("build", BuildResult(OUT, [], PrecompileResult("none"))),
        ("build-variants", VariantsResult(OUT, [
            Outcome(Variant("2.13", "13.0"), True, "built", OUT / "v", [{"filename": "k.whl"}], {"version": "2.13.0"},
                    seconds=1.5, torch_from="PyPI"),
            Outcome(Variant("2.12", "12.6"), False, "left", OUT / "w", why="unreachable", command="kestrel-release build"),
        ], [{"filename": "k.whl"}], 2.0, HUB, PEP825)),
        ("build-variants", VariantsResult(OUT, [], [])),
        ("assemble", AssembleResult(OUT, "k", "1.0", "a" * 40, [{"filename": "k.whl", "source": "/a"}], ["/a"], HUB)),
        ("assemble", AssembleResult(OUT, "k", "1.0", None, [], [])),
        ("release", ReleaseResult("1.0", True, ("pypi",), [StepResult("build", "done", 1.5, "2 wheels")], ["3.12"],
                                  ["3.13"], ["a real index"], "1.0 -> 1.0.1 restored to 1.0")),
        ("release", ReleaseResult(None, False, (), [StepResult("preflight", "failed")])),
        ("publish-static-index", StaticIndexResult("wheels", "/r", False, "https://x",
                                                   [PageResult("cu126", "k", ["k.whl"], [], ["cu126/k/index.html"])],
                                                   [{"filename": "w.whl", "why": "no page"}],
                                                   {"repo": "acme/k", "tag": "v1", "uploaded": ["k.whl"]})),
        ("publish-static-index", StaticIndexResult("wheels", "/r", True)),
    ]  # fmt: skip


def _check(name: str, document: Any) -> None:
    schema = json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(("name", "result"), _documents())
def test_each_command_document_fits_its_published_schema(name: str, result: Any) -> None:
    _check(name, documents.stamp(result.to_json()))


def test_a_report_that_then_failed_fits_too_and_a_stray_field_does_not() -> None:
    error = {"message": "GPU: none", "hint": "run on a GPU host", "exit_code": 3, "kind": "preflight"}
    report = DoctorReport([Check("GPU", "fail", "none", "run on a GPU host")]).to_json()
    _check("doctor", documents.stamp({**report, "ok": False, "error": error}))  # console.flush_json's shape
    _check("version", documents.stamp({**VersionResult("show", "k", "1", "1").to_json(), "ok": False, "error": error}))
    _check("failure", documents.stamp({"ok": False, "error": error}))
    with pytest.raises(jsonschema.ValidationError, match="'stray' was unexpected"):
        _check("doctor", documents.stamp({**report, "stray": 1}))
    with pytest.raises(jsonschema.ValidationError):
        _check("failure", documents.stamp({"ok": True, "error": error}))
