"""Container engines: the only place that builds docker, podman and chroot argv.

A Linux build can run inside an image (build.container) so its wheels link against the image's
glibc rather than the host's. Three engines: docker and podman (an image name), and chroot (a root
directory: the engine for hosts where no container runtime can start, run as root). Each run gets
one workspace (a directory of the tool's: the clean source copy, the carried tools, the outputs)
at WORKDIR inside, and runs `/bin/sh SCRIPT` there; nothing else of the host is visible, and the
environment is the image's own plus what the script exports (no host variable is passed).

Some hosts cannot start containers with an engine's defaults; `usable` tries the run, reads the
failure and retries with the one fix it names, keeping a note of each (shown by -v and doctor):
- an OCI runtime that cannot raise a resource limit (no CAP_SYS_RESOURCE: "setrlimit ...
  Operation not permitted", "error setting rlimit type 7/6"): --ulimit nofile/nproc at values the
  host allows (the current nofile limits; nproc lowered until the runtime accepts it);
- crun on hybrid cgroups (v1 controllers plus a v2 mount: "cgroups in hybrid mode not supported"):
  --runtime runc, when runc is installed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import resource
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kestrel_release.config.model import CONTAINER_ENGINES
from kestrel_release.process import proc

WORKDIR = "/kestrel-release"  # where the workspace appears inside a docker/podman container
_RUNC = ("/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc")
# The only variables a chroot run starts with (a container starts from its image's env instead).
_CHROOT_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
}


@dataclass(frozen=True)
class Engine:
    name: str  # docker | podman | chroot
    binary: str
    runtime: str = ""  # podman/docker --runtime (runc where crun cannot run here)
    ulimits: tuple[str, ...] = ()  # --ulimit values the host allows
    notes: tuple[str, ...] = field(default=(), compare=False)  # why runtime/ulimits were set

    def workspace_parent(self, image: str, default: Path) -> Path:
        """Where a run's workspace is made on the host: inside the root for chroot (it sees nothing
        else), else `default` (mounted at WORKDIR)."""
        return Path(image) / "tmp" if self.name == "chroot" else default

    def inside(self, workspace: Path, image: str) -> str:
        """The workspace's path as the build sees it."""
        if self.name == "chroot":
            return "/" + workspace.resolve().relative_to(Path(image).resolve()).as_posix()
        return WORKDIR

    def run_argv(self, image: str, workspace: Path, script: str) -> list[str]:
        """argv that runs `/bin/sh script` (a path inside) in `image` with `workspace` at inside()."""
        if self.name == "chroot":
            env = [f"{k}={v}" for k, v in _CHROOT_ENV.items()]
            return ["env", "-i", *env, self.binary, str(Path(image).resolve()), "/bin/sh", script]
        argv = [self.binary]
        if self.runtime:
            argv += ["--runtime", self.runtime]
        argv += ["run", "--rm", "--pull=never", "--entrypoint", "/bin/sh"]
        for value in self.ulimits:
            argv += ["--ulimit", value]
        if self.name == "docker" and os.getuid() != 0:  # outputs owned by the user, not the daemon's root
            argv += ["--user", f"{os.getuid()}:{os.getgid()}", "-e", f"HOME={WORKDIR}/home"]
        argv += ["-v", f"{workspace.resolve()}:{WORKDIR}", "-w", WORKDIR, image, script]
        return argv


def engine_name(configured: str, image: str) -> str:
    """The engine to use: the configured one; "" = chroot for a root directory, else podman when
    installed, else docker (cibuildwheel's default)."""
    if configured:
        return configured
    if image.startswith(("/", ".")) and Path(image).is_dir():
        return "chroot"
    return "podman" if shutil.which("podman") else "docker"


def find(name: str) -> Engine | None:
    """The engine's executable, or None when it is not installed (or is no engine of CONTAINER_ENGINES)."""
    if name not in CONTAINER_ENGINES:
        return None
    binary = shutil.which("chroot" if name == "chroot" else name)
    if binary is None and name == "chroot" and Path("/usr/sbin/chroot").exists():
        binary = "/usr/sbin/chroot"
    return Engine(name, binary) if binary else None


def version(engine: Engine) -> str | None:
    """The engine's version ("podman 4.3.1"); for docker the daemon's (None when none answers)."""
    if engine.name == "chroot":
        return "chroot (coreutils)"
    fmt = "{{.Server.Version}}" if engine.name == "docker" else "{{.Client.Version}}"
    result = proc.run([engine.binary, "version", "--format", fmt], check=False, timeout=60)
    return f"{engine.name} {result.output.strip()}" if result.returncode == 0 and result.output.strip() else None


def cannot_run(engine: Engine) -> str | None:
    """Why this engine cannot run anything here (no daemon, not root for chroot), else None."""
    if engine.name == "chroot":
        return None if os.geteuid() == 0 else "chroot needs root (run as root, or use podman/docker)"
    if engine.name == "docker":
        result = proc.run([engine.binary, "version", "--format", "{{.Server.Version}}"], check=False, timeout=60)
        if result.returncode != 0:
            return _last_line(result.output) or "the docker daemon does not answer"
    return None


def image_present(engine: Engine, image: str) -> bool:
    if engine.name == "chroot":
        return (Path(image) / "bin" / "sh").exists()
    return proc.run([engine.binary, "image", "inspect", "--format", "{{.Id}}", image], check=False).returncode == 0


def pull(engine: Engine, image: str) -> str | None:
    """Pull `image`; None when it is now present, else why not (one line)."""
    if engine.name == "chroot":
        return f"{image} is not a root directory (no bin/sh in it)"
    result = proc.run([engine.binary, "pull", image], check=False, timeout=3600)
    return None if result.returncode == 0 else _last_line(result.output) or f"exit {result.returncode}"


def local_images(engine: Engine) -> list[str]:
    """The images in the engine's local storage (REPO:TAG), for doctor."""
    if engine.name == "chroot":
        return []
    result = proc.run([engine.binary, "images", "--format", "{{.Repository}}:{{.Tag}}"], check=False, timeout=60)
    return result.output.split() if result.returncode == 0 else []


def usable(engine: Engine, image: str, workspace: Path, script: str) -> tuple[Engine, proc.Result]:
    """Run `script` once, adjusting the engine to this host as the failures say (module doc).
    Returns the engine that ran it (with its notes) and the last run's result."""
    for _ in range(6):
        result = proc.run(engine.run_argv(image, workspace, script), check=False, timeout=600)
        fixed = _fix(engine, result.output) if result.returncode != 0 else None
        if fixed is None:
            return engine, result
        engine = fixed
    return engine, result


def _fix(engine: Engine, output: str) -> Engine | None:
    """The engine with the one change `output` (a failed run) asks for, or None."""
    if engine.name == "chroot":
        return None
    low = output.lower()
    if "cgroups in hybrid mode" in low and not engine.runtime:
        runc = _runc()
        if runc is None:
            return None
        note = f"crun cannot run on this host's hybrid cgroups: runtime {runc}"
        return dataclasses.replace(engine, runtime=runc, notes=(*engine.notes, note))
    if "rlimit" in low and "not permitted" in low:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        nproc = _nproc(engine.ulimits)
        if nproc is None:
            return None
        ulimits = (f"nofile={soft}:{hard}", f"nproc={nproc}:{nproc}")
        note = (
            "the runtime may not raise resource limits here (no CAP_SYS_RESOURCE): "
            f"--ulimit {ulimits[0]} --ulimit {ulimits[1]}"
        )
        notes = (*(n for n in engine.notes if not n.startswith("the runtime may not")), note)
        return dataclasses.replace(engine, ulimits=ulimits, notes=notes)
    return None


def _nproc(current: tuple[str, ...]) -> int | None:
    """The next process limit to try: the host's own, then lower ones the runtime may accept
    (podman's conmon can hold a lower hard limit than this process), None when all were tried."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    host = hard if hard != resource.RLIM_INFINITY else 1 << 20
    tried = [int(m.group(1)) for v in current if (m := re.fullmatch(r"nproc=(\d+):\d+", v))]
    for candidate in (host, 32768, 4096):
        if candidate <= host and (not tried or candidate < tried[0]):
            return candidate
    return None


def _runc() -> str | None:
    found = shutil.which("runc")
    return found or next((p for p in _RUNC if Path(p).exists()), None)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def failure_hint(engine: Engine, output: str) -> str:
    """What to do about a run that failed with `output` (used in preflight's line)."""
    low = output.lower()
    if "cgroups in hybrid mode" in low:
        return "install runc (apt-get install runc): podman's crun cannot run on hybrid cgroups"
    if "rlimit" in low:
        return "run where the runtime may set resource limits (CAP_SYS_RESOURCE), or use the chroot engine"
    if engine.name == "docker":
        return 'start the docker daemon, or set build.container_engine = "podman"'
    return f"check that `{engine.binary} run` works on this machine"
