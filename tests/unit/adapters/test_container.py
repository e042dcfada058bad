"""adapters/container.py: the argv each engine runs, and the fixes read from a failed run's output."""

from __future__ import annotations

import resource
from pathlib import Path

from kestrel_release.adapters import container
from kestrel_release.adapters.container import WORKDIR, Engine

CRUN_NOFILE = "Error: crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted: OCI permission denied"
CRUN_NPROC = "Error: crun: setrlimit `RLIMIT_NPROC`: Operation not permitted: OCI permission denied"
CRUN_HYBRID = "Error: OCI runtime error: crun: cgroups in hybrid mode not supported, drop all controllers from cgroupv2"
RUNC_NPROC = "error setting rlimits for ready process: error setting rlimit type 6: operation not permitted"


def test_podman_argv_mounts_only_the_workspace_and_passes_no_host_variable(tmp_path: Path):
    argv = Engine("podman", "/usr/bin/podman").run_argv("quay.io/pypa/manylinux_2_28_x86_64", tmp_path, "/w/b.sh")
    assert argv[:2] == ["/usr/bin/podman", "run"]
    assert ["-v", f"{tmp_path.resolve()}:{WORKDIR}"] == argv[argv.index("-v") : argv.index("-v") + 2]
    assert argv.count("-v") == 1 and "--env-host" not in argv and "-e" not in argv
    assert argv[-2:] == ["quay.io/pypa/manylinux_2_28_x86_64", "/w/b.sh"]
    assert "--pull=never" in argv and "--rm" in argv


def test_podman_argv_carries_the_runtime_and_ulimits_a_host_needs(tmp_path: Path):
    engine = Engine("podman", "podman", runtime="/usr/sbin/runc", ulimits=("nofile=20000:20000", "nproc=4096:4096"))
    argv = engine.run_argv("img", tmp_path, "/w/b.sh")
    assert argv[:3] == ["podman", "--runtime", "/usr/sbin/runc"]
    assert argv[argv.index("--ulimit") : argv.index("--ulimit") + 4] == [
        "--ulimit",
        "nofile=20000:20000",
        "--ulimit",
        "nproc=4096:4096",
    ]


def test_docker_argv(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(container.os, "getuid", lambda: 1000)
    monkeypatch.setattr(container.os, "getgid", lambda: 100)
    argv = Engine("docker", "/usr/bin/docker").run_argv("img", tmp_path, "/w/b.sh")
    assert argv[:2] == ["/usr/bin/docker", "run"]
    assert argv[argv.index("--user") + 1] == "1000:100"  # outputs stay the user's, not the daemon's root
    assert argv[-2:] == ["img", "/w/b.sh"]


def test_chroot_argv_starts_from_an_empty_environment(tmp_path: Path):
    root = tmp_path / "root"
    ws = root / "tmp" / "kestrel-release-x"
    ws.mkdir(parents=True)
    engine = Engine("chroot", "/usr/sbin/chroot")
    inside = engine.inside(ws, str(root))
    assert inside == "/tmp/kestrel-release-x"
    argv = engine.run_argv(str(root), ws, f"{inside}/b.sh")
    assert argv[:2] == ["env", "-i"]
    assert argv[-4:] == ["/usr/sbin/chroot", str(root.resolve()), "/bin/sh", "/tmp/kestrel-release-x/b.sh"]
    assert all("=" not in a or a.split("=")[0] in ("PATH", "HOME", "LANG") for a in argv[2:-4])
    assert engine.workspace_parent(str(root), tmp_path / "elsewhere") == root / "tmp"


def test_crun_on_a_host_without_cap_sys_resource_and_hybrid_cgroups_ends_on_runc(monkeypatch):
    """The sequence measured on a bookworm host (podman 4.3.1, crun 1.8, runc 1.1.5)."""
    limits = {resource.RLIMIT_NOFILE: (20000, 20000), resource.RLIMIT_NPROC: (96364, 96364)}
    monkeypatch.setattr(resource, "getrlimit", limits.__getitem__)
    monkeypatch.setattr(container, "_runc", lambda: "/usr/sbin/runc")
    engine = Engine("podman", "podman")
    engine = container._fix(engine, CRUN_NOFILE)
    assert engine is not None and engine.ulimits == ("nofile=20000:20000", "nproc=96364:96364")
    engine = container._fix(engine, CRUN_NPROC)
    assert engine is not None and engine.ulimits[1] == "nproc=32768:32768"
    engine = container._fix(engine, CRUN_HYBRID)
    assert engine is not None and engine.runtime == "/usr/sbin/runc"
    engine = container._fix(engine, RUNC_NPROC)
    assert engine is not None and engine.ulimits[1] == "nproc=4096:4096"
    assert container._fix(engine, RUNC_NPROC) is None  # nothing left to try: preflight says why
    assert len(engine.notes) == 2
    assert any("hybrid cgroups" in n for n in engine.notes)
    assert any("CAP_SYS_RESOURCE" in n and "nproc=4096:4096" in n for n in engine.notes)


def test_hybrid_cgroups_without_runc_is_not_fixed_and_says_to_install_it(monkeypatch):
    monkeypatch.setattr(container, "_runc", lambda: None)
    engine = Engine("podman", "podman")
    assert container._fix(engine, CRUN_HYBRID) is None
    assert "apt-get install runc" in container.failure_hint(engine, CRUN_HYBRID)


def test_unrelated_failures_are_not_retried():
    assert container._fix(Engine("podman", "podman"), "Error: short-name resolution failed") is None
    assert container._fix(Engine("chroot", "chroot"), CRUN_NOFILE) is None


def test_engine_name_defaults(tmp_path: Path, monkeypatch):
    assert container.engine_name("docker", str(tmp_path)) == "docker"
    assert container.engine_name("", str(tmp_path)) == "chroot"
    monkeypatch.setattr(container.shutil, "which", lambda name: None)
    assert container.engine_name("", "quay.io/pypa/manylinux_2_28_x86_64") == "docker"
    monkeypatch.setattr(container.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert container.engine_name("", "quay.io/pypa/manylinux_2_28_x86_64") == "podman"
