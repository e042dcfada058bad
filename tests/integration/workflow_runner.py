"""Run a GitHub Actions workflow here, for tests: each job's `run:` steps in `needs` order.

What it does, like GitHub: jobs in dependency order with `if:` and `needs.*.result`; the matrix
expanded (one leg after another); each job leg in a fresh copy of the checkout (so a job sees only
what it downloads); `${{ ... }}` expressions of the `github`, `matrix`, `needs`, `steps` and `env`
contexts; `$GITHUB_OUTPUT` into step and job outputs; bash with `-eo pipefail`.
What it does instead: `actions/upload-artifact` / `download-artifact` become folders;
`actions/attest-build-provenance` writes a bundle whose statement names each file with its real sha256 (no
signature: that needs a Sigstore identity);
`actions/checkout` and `setup-*` are skipped (the tree is already here); a step whose `id` is in
`substitute` runs the given command instead of its own (the test's stand-in for installing from
PyPI or signing with a Sigstore identity). Any other `uses:` is an error: nothing is skipped silently.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import itertools
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SKIPPED_ACTIONS = ("actions/checkout@", "astral-sh/setup-uv@", "actions/setup-python@")
_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\)|,)|"
    r"(?P<num>\d+(?:\.\d+)?)|(?P<path>[A-Za-z_][\w-]*(?:\.[\w*-]+)*))"
)


def _text(value: Any) -> str:
    return "" if value is None else str(value).lower()  # GitHub compares these case-insensitively


# GitHub's string functions (the generated workflow's `!startsWith(github.ref, 'refs/tags/')`).
_STRING_FUNCTIONS: dict[str, Any] = {
    "startsWith": lambda a, b: _text(a).startswith(_text(b)),
    "endsWith": lambda a, b: _text(a).endswith(_text(b)),
    "contains": lambda a, b: any(_text(x) == _text(b) for x in a) if isinstance(a, list) else _text(b) in _text(a),
}


class WorkflowError(Exception):
    """The workflow uses something this runner does not emulate."""


@dataclass
class StepRecord:
    job: str
    name: str
    status: str  # success | failure | skipped
    output: str = ""


@dataclass
class JobRecord:
    name: str
    result: str  # success | failure | skipped
    outputs: dict[str, str] = field(default_factory=dict)
    legs: list[dict[str, Any]] = field(default_factory=list)


class Expressions:
    """GitHub's expression language, as far as workflows here use it (paths, ==, !=, &&, ||, !, functions)."""

    def __init__(self, contexts: dict[str, Any], status: dict[str, bool]) -> None:
        self.contexts = contexts
        self.status = status  # success / failure / cancelled / always for status functions

    def lookup(self, path: str) -> Any:
        value: Any = self.contexts
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def evaluate(self, expr: str) -> Any:
        out, names, pos = [], {}, 0
        expr = expr.strip()
        while pos < len(expr):
            match = _TOKEN.match(expr, pos)
            if match is None or match.end() == pos:
                raise WorkflowError(f"cannot parse expression: {expr!r}")
            pos = match.end()
            if match["str"] is not None:
                out.append(repr(match["str"][1:-1].replace("''", "'")))
            elif match["op"] is not None:
                out.append({"&&": " and ", "||": " or ", "!": " not ", ",": ","}.get(match["op"], match["op"]))
            elif match["num"] is not None:
                out.append(match["num"])
            else:
                path = match["path"]
                if path in _STRING_FUNCTIONS and expr[pos:].lstrip().startswith("("):  # startsWith(a, b)...
                    value = _STRING_FUNCTIONS[path]  # called with the arguments that follow, as Python does
                elif expr[pos:].lstrip().startswith("("):  # a status function: always(), success()...
                    if path not in self.status:
                        raise WorkflowError(f"unsupported function {path}()")
                    close = expr.index(")", pos)
                    pos = close + 1
                    value: Any = self.status[path]
                elif path in ("true", "false", "null"):
                    value = {"true": True, "false": False, "null": None}[path]
                else:
                    value = self.lookup(path)
                key = f"_v{len(names)}"
                names[key] = value
                out.append(key)
        # Safe: only our own tokens reach eval (values are bound names, never source text).
        return eval("".join(out), {"__builtins__": {}}, names)

    def expand(self, text: Any) -> Any:
        """`${{ ... }}` inside a string; an `if:` without braces is an expression itself."""
        if not isinstance(text, str):
            return text
        return _EXPR.sub(lambda m: _to_str(self.evaluate(m.group(1))), text)

    def condition(self, text: Any, default: str) -> bool:
        if text is None:
            text = default
        if isinstance(text, bool):
            return text
        inner = _EXPR.fullmatch(text.strip())
        return bool(self.evaluate(inner.group(1) if inner else text))


def _to_str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class WorkflowRunner:
    def __init__(
        self,
        workflow: Path,
        checkout: Path,
        work: Path,
        *,
        github: dict[str, str],
        env: dict[str, str],
        substitute: dict[str, str] | None = None,
    ) -> None:
        self.data = yaml.safe_load(Path(workflow).read_text(encoding="utf-8"))
        self.checkout = Path(checkout)
        self.work = Path(work)
        self.artifacts = self.work / "artifacts"
        self.github = {"run_id": "1000", "run_attempt": "1", "workflow": str(self.data.get("name", "")), **github}
        self.env = env
        self.substitute = dict(substitute or {})
        self.jobs: dict[str, JobRecord] = {}
        self.steps: list[StepRecord] = []
        self.substituted: list[str] = []

    def run(self) -> dict[str, JobRecord]:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        for name in self._order():
            self.jobs[name] = self._run_job(name, self.data["jobs"][name])
        return self.jobs

    def _order(self) -> list[str]:
        jobs = self.data["jobs"]
        done: list[str] = []
        while len(done) < len(jobs):
            ready = [n for n in jobs if n not in done and all(d in done for d in _needs(jobs[n]))]
            if not ready:
                raise WorkflowError("the jobs' needs form a cycle")
            done.append(ready[0])
        return done

    def _needs_context(self, job: dict) -> dict[str, Any]:
        return {n: {"result": self.jobs[n].result, "outputs": self.jobs[n].outputs} for n in _needs(job)}

    def _run_job(self, name: str, job: dict) -> JobRecord:
        needs = self._needs_context(job)
        all_ok = all(n["result"] == "success" for n in needs.values())
        status = {
            "success": all_ok,
            "failure": any(n["result"] == "failure" for n in needs.values()),
            "always": True,
            "cancelled": False,
        }
        ctx = {"github": self.github, "needs": needs, "matrix": {}, "steps": {}, "env": {}}
        if not Expressions(ctx, status).condition(job.get("if"), "success()"):
            return JobRecord(name, "skipped")
        record = JobRecord(name, "success")
        for index, leg in enumerate(_matrix(job)):
            outputs = self._run_leg(name, job, leg, needs, index)
            record.legs.append({"matrix": leg, "ok": outputs is not None})
            if outputs is None:
                record.result = "failure"
                continue
            record.outputs.update(outputs)
        return record

    def _run_leg(self, name: str, job: dict, leg: dict, needs: dict, index: int) -> dict[str, str] | None:
        workspace = self.work / "workspaces" / f"{name}-{index}"
        shutil.copytree(self.checkout, workspace, symlinks=True)  # a fresh checkout per job
        steps_ctx: dict[str, Any] = {}
        base_env = {**self.env, **{k: str(v) for k, v in (self.data.get("env") or {}).items()}}
        failed = False
        self._posts: list[Any] = []  # actions/cache's save, run after the job's steps as GitHub's post step
        for number, step in enumerate(job.get("steps", [])):
            ctx = {"github": self.github, "needs": needs, "matrix": leg, "steps": steps_ctx, "env": base_env}
            exprs = Expressions(ctx, {"success": not failed, "failure": failed, "always": True, "cancelled": False})
            label = step.get("name") or step.get("id") or step.get("uses") or f"step {number}"
            if not exprs.condition(step.get("if"), "success()"):
                self.steps.append(StepRecord(name, label, "skipped"))
                continue
            env = {
                **base_env,
                **{k: _to_str(exprs.expand(v)) for k, v in (job.get("env") or {}).items()},
                **{k: _to_str(exprs.expand(v)) for k, v in (step.get("env") or {}).items()},
            }
            ok, output, outputs = self._step(name, step, exprs, env, workspace, leg, number)
            self.steps.append(StepRecord(name, label, "success" if ok else "failure", output))
            if step.get("id"):
                steps_ctx[step["id"]] = {"outputs": outputs, "outcome": "success" if ok else "failure"}
            if not ok:
                failed = True
                break
        if failed:
            return None
        for post in self._posts:
            post()
        ctx = {"github": self.github, "needs": needs, "matrix": leg, "steps": steps_ctx, "env": {}}
        exprs = Expressions(ctx, {})
        return {k: _to_str(exprs.expand(v)) for k, v in (job.get("outputs") or {}).items()}

    def _step(
        self, job: str, step: dict, exprs: Expressions, env: dict[str, str], workspace: Path, leg: dict, number: int
    ) -> tuple[bool, str, dict[str, str]]:
        uses = step.get("uses")
        if uses:
            if uses.startswith(SKIPPED_ACTIONS):
                return True, f"skipped {uses}", {}
            args = {k: _to_str(exprs.expand(v)) for k, v in (step.get("with") or {}).items()}
            if uses.startswith("actions/upload-artifact@"):
                return self._upload(args, workspace)
            if uses.startswith("actions/download-artifact@"):
                return self._download(args, workspace)
            if uses.startswith("actions/attest-build-provenance@"):
                return self._attest(args, workspace)
            if uses.startswith("actions/cache@"):
                return self._cache(args, workspace)
            raise WorkflowError(f"job {job}: no emulation for {uses}")
        command = step["run"]
        if step.get("id") in self.substitute:
            command = self.substitute[step["id"]]
            self.substituted.append(f"{job}:{step['id']}")
        elif "${{" in command:
            command = exprs.expand(command)
        output_file = self.work / "outputs" / f"{len(self.steps)}-{job}-{number}"
        output_file.parent.mkdir(parents=True, exist_ok=True)
        output_file.write_text("")
        leg_name = "-".join(_to_str(v) for v in leg.values() if not isinstance(v, (list, dict)))
        full_env = {
            **env,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_JOB": job,
            "GITHUB_RUN_ID": self.github["run_id"],
            "GITHUB_RUN_ATTEMPT": self.github["run_attempt"],
            "GITHUB_WORKFLOW": self.github["workflow"],
            "GITHUB_REPOSITORY": self.github["repository"],
            "GITHUB_REF_TYPE": self.github["ref_type"],
            "GITHUB_REF_NAME": self.github["ref_name"],
            "GITHUB_API_URL": self.github["api_url"],
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_OUTPUT": str(output_file),
            "RUNNER_NAME": f"local-{job}{'-' + leg_name if leg_name else ''}",
        }
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
            cwd=workspace,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        return proc.returncode == 0, proc.stdout + proc.stderr, _read_outputs(output_file)

    def _upload(self, args: dict[str, str], workspace: Path) -> tuple[bool, str, dict[str, str]]:
        dest = self.artifacts / args["name"]
        if dest.exists():
            return False, f"an artifact named {args['name']} already exists", {}
        source = workspace / args["path"]
        files = (
            [p for p in source.iterdir() if p.is_file() and not p.name.startswith(".")]  # hidden: excluded
            if source.is_dir()
            else [Path(p) for p in sorted(workspace.glob(args["path"]))]
        )
        if not files and args.get("if-no-files-found", "warn") == "error":
            return False, f"no files at {args['path']}", {}
        dest.mkdir(parents=True)
        for path in files:
            shutil.copy2(path, dest / path.name)
        return True, f"uploaded {len(files)} file(s) as {args['name']}", {}

    def _cache(self, args: dict[str, str], workspace: Path) -> tuple[bool, str, dict[str, str]]:
        """actions/cache: restore `path` saved under `key` (exact match) by an earlier job of this run, and save it
        under `key` once the job's steps have passed (GitHub never overwrites a key)."""
        import hashlib

        store = self.work / "cache" / hashlib.sha256(args["key"].encode()).hexdigest()[:16]
        path = workspace / args["path"]
        hit = store.is_dir()
        if hit:
            shutil.copytree(store, path, symlinks=True, dirs_exist_ok=True)

        def save() -> None:
            if not store.exists() and path.is_dir():
                shutil.copytree(path, store, symlinks=True)

        self._posts.append(save)
        return True, f"cache {'restored' if hit else 'missed'}: {args['key']}", {"cache-hit": str(hit).lower()}

    def _attest(self, args: dict[str, str], workspace: Path) -> tuple[bool, str, dict[str, str]]:
        """GitHub's attestation, less its signature: a Sigstore-bundle-shaped file whose in-toto statement names
        every subject-path file (its base name, as actions/attest does) with its real sha256."""
        subjects = []
        for pattern in (line.strip() for line in args.get("subject-path", "").splitlines()):
            for path in sorted(workspace.glob(pattern)) if pattern else []:
                if path.is_file():
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                    subjects.append({"name": path.name, "digest": {"sha256": digest}})
        if not subjects:
            return False, f"Could not find subject at path {args.get('subject-path')}", {}
        statement = {"_type": "https://in-toto.io/Statement/v1", "subject": subjects, "predicateType": "fake"}
        bundle = {
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {"note": "emulated: no Sigstore identity here"},
            "dsseEnvelope": {
                "payload": base64.b64encode(json.dumps(statement).encode()).decode(),
                "payloadType": "application/vnd.in-toto+json",
                "signatures": [{"sig": ""}],
            },
        }
        out = self.work / "attestations" / f"{len(self.steps)}.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(bundle) + "\n")
        return True, f"attested {len(subjects)} subject(s)", {"bundle-path": str(out)}

    def _download(self, args: dict[str, str], workspace: Path) -> tuple[bool, str, dict[str, str]]:
        target = workspace / (args.get("path") or ".")
        if "name" in args:
            names = [args["name"]] if (self.artifacts / args["name"]).is_dir() else []
            if not names:
                return False, f"no artifact named {args['name']}", {}
            pairs = [(args["name"], target)]
        else:
            names = sorted(
                p.name for p in self.artifacts.iterdir() if fnmatch.fnmatch(p.name, args.get("pattern", "*"))
            )
            merge = args.get("merge-multiple") == "true"
            pairs = [(n, target if merge else target / n) for n in names]
        for name, dest in pairs:
            shutil.copytree(self.artifacts / name, dest, dirs_exist_ok=True)
        return True, f"downloaded {', '.join(n for n, _ in pairs)}", {}


def _needs(job: dict) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def _matrix(job: dict) -> list[dict[str, Any]]:
    matrix = (job.get("strategy") or {}).get("matrix")
    if not matrix:
        return [{}]
    axes = {k: v for k, v in matrix.items() if k not in ("include", "exclude")}
    legs = [dict(zip(axes, values, strict=False)) for values in itertools.product(*axes.values())] if axes else []
    legs += list(matrix.get("include") or [])
    excluded = matrix.get("exclude") or []
    return [leg for leg in legs if not any(all(leg.get(k) == v for k, v in ex.items()) for ex in excluded)]


def _read_outputs(path: Path) -> dict[str, str]:
    """`name=value` lines and `name<<DELIM` blocks, as GitHub reads $GITHUB_OUTPUT."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            key, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            out[key] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        key, _, value = line.partition("=")
        if key:
            out[key] = value
        i += 1
    return out
