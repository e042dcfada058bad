"""What each Python's build took (stages/build_wheels/history.py): the record and the plan's forecast."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.stages.build_wheels import history
from kestrel_release.stages.build_wheels.history import Measured

GIB = 1024**3


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))


def test_no_previous_build_says_so_instead_of_guessing() -> None:
    text = history.forecast({}, ["3.12", "3.13"], 2, None)
    assert text == "forecast: none yet (no build of this project measured on this machine; this one is recorded)"


def test_the_lead_alone_then_the_rest_at_once() -> None:
    rows = {py: Measured(600.0, 3 * GIB, 2 * GIB, 4) for py in ("3.10", "3.11", "3.12", "3.13")}
    # 3.13 alone (10 min), then three at once (10 min): 20 min, three trees together at the peak.
    assert history.forecast(rows, list(rows), 3, "3.13") == "forecast: about 20 min, 9.0 GiB peak (the last build here)"
    # two at a time: 10 + 20 min.
    assert history.forecast(rows, list(rows), 2, "3.13").startswith("forecast: about 30 min, 6.0 GiB peak")


def test_a_warm_last_build_also_names_the_cold_figure_and_unbuilt_pythons() -> None:
    rows = {"3.12": Measured(30.0, GIB, GIB, 2, slowest_s=2400.0)}
    text = history.forecast(rows, ["3.12", "3.13"], 2, None)
    assert text == (
        "forecast: about 30 s, 2.0 GiB peak (the last build here); up to 40 min when everything compiles "
        "again; Python 3.13 never built here, counted like the others"
    )


def test_save_merges_and_keeps_the_largest_compile_and_slowest_time(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    history.save(project, {"3.12": Measured(500.0, 4 * GIB, 2 * GIB, 2)})
    history.save(project, {"3.12": Measured(20.0, GIB // 2, GIB // 8, 2), "3.13": Measured(25.0, GIB, GIB // 4, 2)})
    rows = history.load(project)
    assert rows["3.12"] == Measured(20.0, GIB // 2, 2 * GIB, 2, slowest_s=500.0)
    assert history.largest_compile(rows, ["3.12", "3.13"]) == 2 * GIB
    assert history.largest_compile(rows, ["3.11"]) is None


def test_an_unreadable_record_is_no_record(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    history.path(project).write_text("{not json")
    assert history.load(project) == {}
