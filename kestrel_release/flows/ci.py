"""`kestrel-release ci init`: write the GitHub Actions release workflow for the kernel package.

The workflow (rendered from templates/ci-workflow.yml.j2) fans out: `plan` computes one
version (the tag's, or one nightly version shared by every build); `build` runs once per
platform and Python (once per platform when the wheel is abi3/py3), on the GPU runners
(`ci.runner_labels`) for Linux CUDA builds (each platform's runners: kestrel_release/platforms) and on plain hosted runners otherwise, and uploads
its build output; `assemble` combines the outputs (`kestrel-release assemble`) and verifies
them; `publish` (tags only, the protected environment, the only job with `id-token: write`)
signs PEP 740 attestations with pypi-attestations and uploads them with the wheels by
trusted publishing; `github` (with `contents: write`) publishes the GitHub release. The GitHub release's
assets and each static index's files are attested with GitHub's artifact attestations (Sigstore build
provenance, `id-token: write` + `attestations: write` in those jobs alone); each job keeps its bundle as a
workflow artifact, which `kestrel-release verify WHEEL --attestation FILE` checks.
Actions are pinned to full commit SHAs; untrusted values reach `run:` only via `env:`.
A project without uv.lock gets the tool by `uv tool install` of one exact git commit (`ci.tool_source`,
else the running tool's own commit): the name kestrel-release is on no index, and installing an unclaimed
name in a job that holds `id-token: write` would run whatever someone uploads under it.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release import platforms
from kestrel_release.errors import UsageError
from kestrel_release.files import fsutil

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

TEMPLATE = "ci-workflow.yml.j2"
WORKFLOW = Path(".github/workflows/kernels-release.yml")
NIGHTLY_CRON = "17 3 * * *"  # off the hour: scheduled runs at :00 are delayed the most
LOCKED_TOOL = "uv run --locked kestrel-release"
# Pinned publishing tools (the publish job installs exactly these).
TWINE = "twine==7.0.0"
ATTESTATIONS = "pypi-attestations==0.0.30"
# Full commit SHAs of the released tags (a tag can be moved; a SHA cannot).
ACTIONS = {
    "checkout": {"sha": "11bd71901bbe5b1630ceea73d27597364c9af683", "version": "v4.2.2"},
    "upload_artifact": {"sha": "ea165f8d65b6e75b540449e92b4886f43607fa02", "version": "v4.6.2"},
    "download_artifact": {"sha": "d3f86a106a0bac45b974a628896c90dbdf5c8093", "version": "v4.3.0"},
    "setup_uv": {"sha": "e92bafb6253dcd438e0484186d7669ea7a8ca1cc", "version": "v6.4.3"},
    "pypi_publish": {"sha": "76f52bc884231f62b9a034ebfe128415bbaabdfc", "version": "v1.12.4"},
    # GitHub's artifact attestations (a Sigstore bundle per run, kept by GitHub; `gh attestation verify`).
    "attest_provenance": {"sha": "a2bbfa25375fe432b6a289bc6b6cd05ecd0c4c32", "version": "v4.1.0"},
    "cache": {"sha": "5a3ec84eff668545956fd18022155c47e93e2684", "version": "v4.2.3"},
}
# The compile cache's folder in a build job (build.compile_cache_dir, relative to the project): restored
# before the build and saved after it by actions/cache, so a CI build compiles only what changed.
CI_COMPILE_CACHE = ".kestrel-ccache"
# What may appear unquoted in YAML and shell lines: keep the workflow injection-free.
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/-]+")
_SAFE_WORD = re.compile(r"[A-Za-z0-9._-]+")


def _repo_root(cfg: Config, output: Path | None) -> Path:
    """The git root the workflow's paths are relative to (the project itself outside git)."""
    from kestrel_release.adapters import git

    root = git.state(cfg.project_dir).root
    if root is None and output is None:
        raise UsageError(
            f"{cfg.project_dir} is not in a git repository", "run it inside the repository, or pass --output PATH"
        )
    return root or cfg.project_dir


def _relative(path: Path, root: Path, what: str) -> str:
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise UsageError(
            f"the {what} {path} is outside the repository {root}",
            "keep the kernel package and its output inside the repository",
        ) from None
    if rel != "." and not _SAFE_PATH.fullmatch(rel):
        raise UsageError(
            f"the {what} '{rel}' has characters the workflow cannot use safely",
            "use letters, digits, '.', '_', '-' and '/' only",
        )
    return rel


def _check_words(cfg: Config) -> None:
    for label in (*cfg.ci.runner_labels, cfg.ci.environment):
        if not _SAFE_WORD.fullmatch(label):
            raise UsageError(
                f"ci: '{label}' is not a valid runner label or environment name",
                "use letters, digits, '.', '_' and '-' only",
            )
    if not cfg.ci.runner_labels:
        raise UsageError("ci.runner_labels is empty", 'set e.g. ["self-hosted", "gpu", "h100"]')


@dataclass(frozen=True)
class ToolInstall:
    """How the jobs get kestrel-release: the locked one (uv.lock), or `uv tool install` of `requirement`."""

    locked: bool
    requirement: str = ""
    source: str = ""  # where `requirement` came from, for the user


TOOL_SOURCE_HINT = (
    'set ci.tool_source = "git+https://HOST/OWNER/kestrel-release@<full commit id>" ([tool.kestrel-release.ci] '
    "or KESTREL_RELEASE_CI_TOOL_SOURCE): the exact commit the jobs install; or lock kestrel-release in the "
    "repository's uv.lock (`uv add --dev` from that commit) so the jobs run `uv run --locked`"
)


def tool_install(cfg: Config, root: Path) -> ToolInstall:
    """The locked tool, else one exact commit: never a name from an index (it is unclaimed there)."""
    from kestrel_release.adapters import tool_origin

    if has_lock(root):
        return ToolInstall(locked=True, source=f"{root / 'uv.lock'}")
    configured = cfg.ci.tool_source.strip()
    if configured:
        bad = tool_origin.problem(configured)
        if bad:
            raise UsageError(f"ci.tool_source '{tool_origin.shown(configured)}' {bad}", TOOL_SOURCE_HINT)
        return ToolInstall(False, f"{tool_origin.DIST} @ {configured}", "ci.tool_source")
    found, how = tool_origin.source()
    if found is None or tool_origin.problem(found):
        raise UsageError(
            "ci init: the jobs need kestrel-release, which is on no package index (installing the name would "
            f"take whatever someone uploads under it), and this copy does not know its exact public source: {how}",
            TOOL_SOURCE_HINT,
        )
    return ToolInstall(False, f"{tool_origin.DIST} @ {found}", how)


def render_workflow(cfg: Config, root: Path, tool: ToolInstall | None = None) -> str:
    """The workflow text for `cfg`, with paths relative to the repository `root`."""

    from kestrel_release import templates

    _check_words(cfg)
    tool = tool or tool_install(cfg, root)
    env = templates.environment(
        trim_blocks=True,
        lstrip_blocks=True,
        # GitHub owns ${{ ... }}: our own placeholders are [[ ... ]].
        variable_start_string="[[",
        variable_end_string="]]",
        block_start_string="[%",
        block_end_string="%]",
        comment_start_string="[#",
        comment_end_string="#]",
    )
    project = _relative(cfg.project_dir, root, "project directory")
    locked = tool.locked
    builds = build_jobs(cfg)
    return env.get_template(TEMPLATE).render(
        name=cfg.name,
        project=project,
        compile_cache=CI_COMPILE_CACHE,
        compile_cache_path=posixpath.normpath(posixpath.join(project, CI_COMPILE_CACHE)),
        workflow_name="kernels-release",
        cron=NIGHTLY_CRON,
        out_dir=_relative(cfg.out_path, root, "output directory"),
        actions=ACTIONS,
        builds=builds,
        build_ids=[f"build-{b['platform']}" for b in builds],
        variants=any(b["variants"] for b in builds),
        static_indexes=static_jobs(cfg, root),
        locked=locked,
        tool=LOCKED_TOOL if locked else "kestrel-release",
        tool_requirement=tool.requirement,
        twine=TWINE,
        attestations=ATTESTATIONS,
        environment=cfg.ci.environment,
    )


def has_lock(root: Path) -> bool:
    """A uv.lock at the repository root that locks kestrel-release: the jobs run the locked tool.

    Without one, `uv run --locked` fails on the first step (issue 16), so the jobs install it.
    """
    lock = root / "uv.lock"
    try:
        return lock.is_file() and 'name = "kestrel-release"' in lock.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def build_jobs(cfg: Config) -> list[dict]:
    """One build job per platform, with its Python matrix (one Python for abi3/py3 wheels).

    A job per platform, not one matrix over runners: actionlint checks a static `runs-on`.
    A manylinux/musllinux tag (two glibc flavours of x86_64 are two platforms) is passed to
    the build as its repair target; the default (no `platforms`) is this machine's platform.
    """
    import sysconfig

    configured_all = tuple(getattr(cfg, "platforms", ()) or ()) or (sysconfig.get_platform(),)
    once = getattr(cfg, "abi", "per-python") in ("abi3", "py3")
    pythons = sorted(cfg.python, key=lambda v: tuple(int(p) for p in v.split(".")))
    jobs: dict[str, dict] = {}
    build = getattr(cfg, "build", None)
    image = getattr(build, "container", "") or ""
    # build.container: the Linux jobs run in that image (the job's `container:`), and the tool builds
    # right there; a chroot root directory is the machine's own, not a CI image.
    if getattr(build, "container_engine", "") == "chroot" or image.startswith(("/", ".")):
        image = ""
    for configured in configured_all:
        key = platforms.runner_key(configured)
        plat = platforms.ci_plat(configured)
        in_image = platforms.for_tag(configured).ci_containers
        name = plat or key
        jobs.setdefault(
            name,
            {
                "platform": name,
                "runner": _runner(cfg, configured),
                "plat": plat,
                "pythons": pythons[:1] if once else pythons,
                "container": image if in_image else None,
                # --gpus only where the job needs the GPU (requires_gpu); cross-compiling needs none.
                "gpus": bool(image and in_image and cfg.requires_gpu),
                "variants": variant_names(cfg, configured),
            },
        )
    return list(jobs.values())


def variant_names(cfg: Config, configured: str) -> list[str]:
    """The torch x CUDA variants a platform's build job fans out over ([tool.kestrel-release.variants]);
    [] for a project without variants (one build per Python, as before)."""
    variants = getattr(cfg, "variants", None)
    p = platforms.parse(configured)
    if variants is None or p is None:
        return []
    return [v.name for v in variants.matrix(p.system, p.arches[0])]


def static_jobs(cfg: Config, root: Path) -> list[dict]:
    """One job per static-index target: every variant of the assembled release into its index (`dir`, kept as
    an artifact for the static host; with `github`, the wheels as that release's assets)."""
    from kestrel_release import targets

    jobs: list[dict] = []
    if not getattr(cfg, "targets", None):  # a plan without targets (ci's own callers pass a bare namespace)
        return jobs
    for name, index in sorted(targets.variant_indexes(cfg).items()):
        if not _SAFE_WORD.fullmatch(name):
            raise UsageError(f"ci: the target name '{name}' cannot be a job name", "use letters, digits, '.', '_', '-'")
        folder = _relative(cfg.project_dir / index.dir, root, f"static index directory of {name}")
        jobs.append({"name": name, "dir": folder, "github": index.holds_assets})
    return jobs


def _runner(cfg: Config, configured: str) -> str | list[str]:
    """GPU runners for CUDA builds where the platform has them (Linux); hosted runners otherwise
    (each platform's own mapping: kestrel_release/platforms)."""
    cuda = bool(cfg.precompile) or cfg.requires_gpu or bool(cfg.verify.required_sass)
    return platforms.ci_runner(configured, cuda, tuple(cfg.ci.runner_labels))


def init(cfg: Config, output: Path | None = None, force: bool = False) -> tuple[Path, ToolInstall]:
    """Write the workflow to `output` (default: .github/workflows/kernels-release.yml at the git root).

    Refuses to overwrite an existing file unless `force`; the write is atomic. Returns the path and
    how the jobs get the tool (the CLI says so).
    """
    from kestrel_release.project import meta as project_meta

    cfg = project_meta.resolve(cfg)  # the workflow names the package
    root = _repo_root(cfg, output)
    path = Path(output).resolve() if output is not None else root / WORKFLOW
    if path.is_dir():
        raise UsageError(f"{path} is a directory", "pass --output FILE")
    if path.exists() and not force:
        raise UsageError(f"{path} already exists", "pass --force to overwrite it")
    tool = tool_install(cfg, root)
    fsutil.atomic_write_text(path, render_workflow(cfg, root, tool))
    return path, tool
