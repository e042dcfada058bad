"""`kestrel-release ci init`: write the GitHub Actions release workflow for the kernel package.

The workflow (rendered from templates/ci-workflow.yml.j2) has three jobs: `plan`
computes one version (the tag's, or a single nightly version shared by every build),
`build` fans out per configured Python on the self-hosted GPU runners, and `publish`
(in the protected environment, the only job with write permissions) verifies the
wheels, publishes to PyPI by trusted publishing on tags, and to the GitHub release.
Actions are pinned to full commit SHAs; untrusted values reach `run:` only via `env:`.
"""

from __future__ import annotations

import re
from pathlib import Path

from kestrel_release import fsutil
from kestrel_release.errors import UsageError

TEMPLATE = "ci-workflow.yml.j2"
WORKFLOW = Path(".github/workflows/kernels-release.yml")
NIGHTLY_CRON = "17 3 * * *"  # off the hour: scheduled runs at :00 are delayed the most
TOOL = "uv run --locked kestrel-release"
# Full commit SHAs of the released tags (a tag can be moved; a SHA cannot).
ACTIONS = {
    "checkout": {"sha": "11bd71901bbe5b1630ceea73d27597364c9af683", "version": "v4.2.2"},
    "upload_artifact": {"sha": "ea165f8d65b6e75b540449e92b4886f43607fa02", "version": "v4.6.2"},
    "download_artifact": {"sha": "d3f86a106a0bac45b974a628896c90dbdf5c8093", "version": "v4.3.0"},
    "setup_uv": {"sha": "e92bafb6253dcd438e0484186d7669ea7a8ca1cc", "version": "v6.4.3"},
    "pypi_publish": {"sha": "76f52bc884231f62b9a034ebfe128415bbaabdfc", "version": "v1.12.4"},
}
# What may appear unquoted in YAML and shell lines: keep the workflow injection-free.
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/-]+")
_SAFE_WORD = re.compile(r"[A-Za-z0-9._-]+")


def _repo_root(cfg, output: Path | None) -> Path:
    """The git root the workflow's paths are relative to (the project itself outside git)."""
    from kestrel_release.adapters import git

    root = git.state(cfg.project_dir).root
    if root is None and output is None:
        raise UsageError(f"{cfg.project_dir} is not in a git repository",
                         "run it inside the repository, or pass --output PATH")
    return root or cfg.project_dir


def _relative(path: Path, root: Path, what: str) -> str:
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise UsageError(f"the {what} {path} is outside the repository {root}",
                         "keep the kernel package and its output inside the repository") from None
    if rel != "." and not _SAFE_PATH.fullmatch(rel):
        raise UsageError(f"the {what} '{rel}' has characters the workflow cannot use safely",
                         "use letters, digits, '.', '_', '-' and '/' only")
    return rel


def _check_words(cfg) -> None:
    for label in (*cfg.ci.runner_labels, cfg.ci.environment):
        if not _SAFE_WORD.fullmatch(label):
            raise UsageError(f"ci: '{label}' is not a valid runner label or environment name",
                             "use letters, digits, '.', '_' and '-' only")
    if not cfg.ci.runner_labels:
        raise UsageError("ci.runner_labels is empty", 'set e.g. ["self-hosted", "gpu", "h100"]')


def render_workflow(cfg, root: Path) -> str:
    """The workflow text for `cfg`, with paths relative to the repository `root`."""
    import jinja2

    from kestrel_release.templates import templates_dir

    _check_words(cfg)
    env = jinja2.Environment(  # not templates.render: this one needs its own delimiters
        loader=jinja2.FileSystemLoader(str(templates_dir())), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, autoescape=False,
        # GitHub owns ${{ ... }}: our own placeholders are [[ ... ]].
        variable_start_string="[[", variable_end_string="]]",
        block_start_string="[%", block_end_string="%]", comment_start_string="[#", comment_end_string="#]",
    )
    project = _relative(cfg.project_dir, root, "project directory")
    return env.get_template(TEMPLATE).render(
        name=cfg.name, project=project, workflow_name="kernels-release", cron=NIGHTLY_CRON,
        out_dir=_relative(cfg.out_path, root, "output directory"), tool=TOOL, actions=ACTIONS,
        pythons=list(cfg.python), runner_labels=list(cfg.ci.runner_labels), environment=cfg.ci.environment,
    )


def init(cfg, output: Path | None = None, force: bool = False) -> Path:
    """Write the workflow to `output` (default: .github/workflows/kernels-release.yml at the git root).

    Refuses to overwrite an existing file unless `force`; the write is atomic.
    """
    root = _repo_root(cfg, output)
    path = Path(output).resolve() if output is not None else root / WORKFLOW
    if path.is_dir():
        raise UsageError(f"{path} is a directory", "pass --output FILE")
    if path.exists() and not force:
        raise UsageError(f"{path} already exists", "pass --force to overwrite it")
    fsutil.atomic_write_text(path, render_workflow(cfg, root))
    return path
