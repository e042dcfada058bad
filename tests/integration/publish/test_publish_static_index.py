"""publish --target <static-index>: every variant into PyTorch's index layout, served by a static host,
installed per variant with `pip install --index-url .../cu126 NAME==V+cu126` (and uv pip, which reads PEP 691)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kestrel_release.adapters.uv import find_uv
from kestrel_release.sandbox.static_host import StaticHost
from tests.factories import NAME, make_project, make_variant_dist
from tests.helpers import assert_one_line_error, python_version, run_in_process
from tests.schemas import fits

TARGET = '\n[tool.kestrel-release.targets.wheels]\nkind = "static-index"\ndir = "site/whl"\n'


def project_with_variants(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    project = make_project(tmp_path / "kernels", pythons=(python_version(),))
    with open(project / "pyproject.toml", "a") as fh:
        fh.write(TARGET)
    return project, make_variant_dist(project / "dist-all")


def publish(project: Path, *args: str):
    return run_in_process(["publish", "--project", str(project), "--target", "wheels", "--json", *args])


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def pip_install(tmp_path: Path, index_url: str, requirement: str) -> str:
    """Install into a fresh venv from the index alone, then import: what the user's `python -c` prints."""
    venv = tmp_path / f"venv-{abs(hash((index_url, requirement)))}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {"PIP_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--isolated",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--index-url",
            index_url,
            requirement,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    shown = subprocess.run(
        [str(py), "-c", f"import {NAME.replace('-', '_')} as m; print(m.__version__)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return shown.stdout.strip()


def test_each_variant_installs_from_its_cuda_index_with_pip(tmp_path):
    project, wheels = project_with_variants(tmp_path)
    result = publish(project)
    assert result.code == 0, result.output
    doc = fits("publish-static-index", result.stdout)
    root = project / "site/whl"
    assert doc["uploaded"] == sorted(w.name for w in wheels.values())
    assert sorted(doc["index_urls"]) == ["cu126", "cu130"]
    assert f"cu126/{NAME}/kestrel_kernels-0.1.0+cu126-py3-none-any.whl" in files(root)
    assert f"cu130/{NAME}/kestrel_kernels-0.1.0-py3-none-any.whl" in files(root)  # the default, plain version
    with StaticHost(root) as host:
        assert pip_install(tmp_path, f"{host.url}/cu126", f"{NAME}==0.1.0+cu126") == "0.1.0+cu126"
        assert pip_install(tmp_path, f"{host.url}/cu130/", NAME) == "0.1.0"


def test_uv_reads_the_json_pages_the_host_negotiates(tmp_path):
    project, _ = project_with_variants(tmp_path)
    assert publish(project).code == 0
    venv = tmp_path / "uv-venv"
    uv = str(find_uv())
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "UV_NO_CONFIG": "1", "UV_CACHE_DIR": str(tmp_path / "c")}
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=env)
    with StaticHost(project / "site/whl") as host:
        done = subprocess.run(
            [
                uv,
                "pip",
                "install",
                "--python",
                str(venv / "bin/python"),
                "--index-url",
                f"{host.url}/cu126",
                f"{NAME}==0.1.0+cu126",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        log = host.log.read_text()
    assert f'"GET /cu126/{NAME}/ HTTP/1.1" 200' in log
    shown = subprocess.run(
        [str(venv / "bin/python"), "-c", "import kestrel_kernels as m; print(m.__version__)"],
        capture_output=True,
        text=True,
    )
    assert shown.stdout.strip() == "0.1.0+cu126"


def test_a_second_publish_changes_nothing_and_a_new_version_keeps_the_old(tmp_path):
    project, _ = project_with_variants(tmp_path)
    root = project / "site/whl"
    assert publish(project).code == 0
    before = files(root)
    again = publish(project)
    assert again.code == 0, again.output
    assert json.loads(again.stdout)["uploaded"] == [] and files(root) == before
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "0.1.0"', 'version = "0.2.0"'))
    make_variant_dist(project / "dist-all", version="0.2.0")
    for old in (project / "dist-all").rglob("*-0.1.0*.whl"):
        old.unlink()
    assert publish(project).code == 0
    versions = json.loads((root / f"cu126/{NAME}/index.json").read_text())["versions"]
    assert versions == ["0.1.0+cu126", "0.2.0+cu126"]


def test_other_bytes_under_a_published_name_exit_6_with_one_line(tmp_path):
    project, _ = project_with_variants(tmp_path)
    assert publish(project).code == 0
    before = files(project / "site/whl")
    out = tmp_path / "rebuilt"
    # other bytes, same name: a rebuild that is not reproducible, with its own consistent manifest
    make_variant_dist(out, variants=(("2.13", "12.6", False),), payload=b"other")
    rebuilt = next(out.rglob("*.whl"))
    result = run_in_process(["publish", "--project", str(project), "--target", "wheels", str(rebuilt)])
    assert_one_line_error(result, 6, "already lists kestrel_kernels-0.1.0+cu126-py3-none-any.whl with sha256")
    assert files(project / "site/whl") == before


def test_a_static_index_without_dir_is_one_config_error(tmp_path):
    project = make_project(tmp_path / "kernels")
    with open(project / "pyproject.toml", "a") as fh:
        fh.write('\n[tool.kestrel-release.targets.wheels]\nkind = "static-index"\ndri = "x"\n')
    result = run_in_process(["publish", "--project", str(project), "--target", "wheels"])
    assert result.code == 2, result.output
    assert "targets.wheels].dri: unknown key (did you mean 'dir'?)" in result.stderr
    assert "targets.wheels].dir: missing" in result.stderr


def test_wheels_as_release_assets_and_pages_linking_them_install_with_pip(tmp_path):
    from kestrel_release.sandbox.github.emulator import GithubEmulator
    from tests.factories import GITHUB_REPO

    project, wheels = project_with_variants(tmp_path)
    with open(project / "pyproject.toml", "a") as fh:
        fh.write(f'github = {{repo = "{GITHUB_REPO}", tag = "v{{version}}"}}\n')
    with GithubEmulator(repos=(GITHUB_REPO,)) as gh:
        args = ["--api-url", gh.api_url, "--token-env", "EMU_TOKEN"]
        env = {"EMU_TOKEN": gh.token}
        result = run_in_process(["publish", "--project", str(project), "--target", "wheels", "--json", *args], env=env)
        assert result.code == 0, result.output
        doc = fits("publish-static-index", result.stdout)  # its wheels as a GitHub release's assets
        assert doc["release"]["tag"] == "v0.1.0"
        assert sorted(doc["release"]["uploaded"]) == sorted(w.name for w in wheels.values())
        assert sorted(gh.assets(GITHUB_REPO, "v0.1.0")) == sorted(w.name for w in wheels.values())
        assert not gh.release(GITHUB_REPO, "v0.1.0").draft
        root = project / "site/whl"
        assert not list(root.rglob("*.whl"))  # the pages link the assets; no copies
        page = (root / f"cu126/{NAME}/index.html").read_text()
        assert f'href="{gh.url}/{GITHUB_REPO}/releases/download/v0.1.0/kestrel_kernels-0.1.0%2Bcu126-py3' in page
        again = run_in_process(["publish", "--project", str(project), "--target", "wheels", "--json", *args], env=env)
        assert again.code == 0 and json.loads(again.stdout)["release"]["uploaded"] == []
        with StaticHost(root) as host:
            assert pip_install(tmp_path, f"{host.url}/cu126", f"{NAME}==0.1.0+cu126") == "0.1.0+cu126"


def test_release_rehearsal_publishes_every_variant_to_a_served_stand_in(tmp_path):
    project, wheels = project_with_variants(tmp_path)
    out = project / "dist-all"
    result = run_in_process(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(out),
            "--rehearse",
            "--yes",
            "--json",
            "--allow-dirty",
            "--targets",
            "wheels",
        ]
    )
    assert result.code == 0, result.output
    steps = {s["name"]: s for s in json.loads(result.stdout)["steps"]}
    assert list(steps) == ["preflight", "verify", "publish-wheels"]  # each target is its own publish step
    assert "2 added, 0 already there, in cu126, cu130" in steps["publish-wheels"]["detail"]
    stand_in = tmp_path / "kernels/dist-all.rehearsal/static-index/wheels"
    assert sorted(p.name for p in stand_in.rglob("*.whl")) == sorted(w.name for w in wheels.values())
    assert not (project / "site").exists()  # a rehearsal never writes the real index
    assert "static index served at http://127.0.0.1:" in result.stderr


def test_release_preflight_names_a_page_another_tool_wrote_before_anything_runs(tmp_path):
    project, _ = project_with_variants(tmp_path)
    page = project / "site/whl/cu130/index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html>theirs</html>")
    result = run_in_process(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(project / "dist-all"),
            "--yes",
            "--allow-dirty",
            "--targets",
            "wheels",
        ]
    )
    assert_one_line_error(result, 3, f"wheels: {page} was not written by kestrel-release")
    assert page.read_text() == "<html>theirs</html>" and not list((project / "site").rglob("*.whl"))
