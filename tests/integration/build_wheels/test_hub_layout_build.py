"""`build --layout kernels-hub` on a real build (a C extension, built in seconds): the variant comes from the
torch the build recorded, the layout holds the built extension module and kernels loads it; a build that
recorded no torch gets one line saying what to add (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.factories import make_c_ext_project
from tests.helpers import assert_one_line_error, need, run_cli
from tests.schemas import fits

FAKE_TORCH = (
    '__version__ = "2.13.0+cu130"\nclass version:\n    cuda = "13.0"\nclass _C:\n    _GLIBCXX_USE_CXX11_ABI = True\n'
)
VARIANT = "torch213-cxx11-cu130-x86_64-linux"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1700000000", **extra}


def test_build_writes_the_layout_of_its_torch_and_kernels_imports_the_extension(tmp_path: Path) -> None:
    if subprocess.run([sys.executable, "-c", "import kernels"], capture_output=True).returncode != 0:
        need("the kernels package", "tools/uv sync (it is in the dev group)")
    project = make_c_ext_project(tmp_path / "p")
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(FAKE_TORCH)  # what torch_probe reads in the build's Python
    result = run_cli(
        ["build", "--project", str(project), "--no-gpu-check", "--layout", "kernels-hub", "--json"],
        env=_env(tmp_path, PYTHONPATH=str(fake)),
        timeout=600,
    )
    assert result.code == 0, result.output
    (hub,) = fits("build", result.stdout)["hub"]["variants"]
    assert hub["variant"] == VARIANT and hub["package"] == "mini_ext" and hub["derived"] is True
    vdir = project / "dist-all" / "build" / VARIANT
    assert [p.name for p in (vdir / "mini_ext").glob("_c.*.so")]
    script = (
        "import sys, importlib, kernels\nfrom pathlib import Path\n"
        "m = kernels.get_local_kernel(Path(sys.argv[1]))\n"
        "c = importlib.import_module(m.__name__ + '._c')\nprint('loaded', c.__file__)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, str(vdir)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert ran.returncode == 0, ran.stderr
    assert f"build/{VARIANT}/mini_ext/_c." in ran.stdout


def test_a_build_that_recorded_no_torch_is_told_what_to_add(tmp_path: Path) -> None:
    project = make_c_ext_project(tmp_path / "p")
    result = run_cli(
        ["build", "--project", str(project), "--no-gpu-check", "--layout", "kernels-hub"],
        env=_env(tmp_path),
        timeout=600,
    )
    assert_one_line_error(result, 2, "--layout kernels-hub needs the torch", "[tool.kestrel-release.variants]")
    assert not (project / "dist-all" / "build").exists()
