"""publish's quota forecast, before the first byte: the project's size limit and each file's margin.

PyPI limits a project to 10 GiB in all (more on request) and refuses an upload
over it only after the whole file was sent, release by release. So before
uploading we read what the project already holds from the index's JSON API
(`/pypi/<name>/json`, the sum of `releases.*[].size`), add what this release
will send, and compare with `verify.project_size_budget` (the project limit;
raise it when PyPI grants more). An index without that API (pypiserver, devpi,
many private indexes) or one that cannot be reached gives a warning: the check
was not made, which is not a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kestrel_release.errors import PublishError
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.adapters.pypi.client import Index
    from kestrel_release.stages.verify import WheelReport

FILE_MARGIN_WARN = 0.90  # warn when a file uses more than this share of the per-file limit
REMEDIES = (
    "delete old releases or files you no longer need (PyPI: your project > Manage > Releases), "
    "request a larger project limit at https://github.com/pypi/support (project size limit), or "
    "ship one abi3 or py3 wheel per platform instead of one per Python; then set "
    "verify.project_size_budget to the limit you have"
)


def file_margins(wheels: list[WheelReport], file_limit: int) -> list[dict[str, Any]]:
    """Each file's share of the per-file limit, largest first; a warning above 90%."""
    rows = []
    for w in sorted(wheels, key=lambda w: -w.size):
        share = w.size / file_limit if file_limit else 0.0
        rows.append(
            {
                "filename": w.filename,
                "size": w.size,
                "percent_of_file_limit": round(100 * share, 1),
                "margin": file_limit - w.size,
            }
        )
        if share > FILE_MARGIN_WARN:
            console.warn(
                f"{w.filename} is {console.size(w.size)}, {100 * share:.0f}% of the {console.size(file_limit)} per-file "
                f"limit ({console.size(max(0, file_limit - w.size))} to spare): the next release may not fit; "
                "shrink it or ask the index for a larger file limit"
            )
    return rows


def forecast(
    name: str,
    index: Index,
    release: list[WheelReport],
    todo: list[WheelReport],
    limit: int,
    file_limit: int,
    present_on_index: Callable[[], bool],
    timeout: float = 10.0,
) -> dict[str, Any]:
    """Print the forecast; PublishError (exit 6) when this release would take the project over `limit`.

    `release`: every wheel of this release; `todo`: those not on the index yet (what will be sent);
    `present_on_index()`: whether the simple index lists any file of the project (tells a missing
    JSON API from a new project when the API answers 404)."""
    from kestrel_release.adapters.pypi import json_api as pypi_json

    out: dict[str, Any] = {"checked": False, "limit": limit, "files": file_margins(release, file_limit)}
    if out["files"] and not console.json_mode():
        top = out["files"][0]
        console.info(
            f"largest file: {top['filename']}, {console.size(top['size'])} = {top['percent_of_file_limit']:.0f}% "
            f"of the {console.size(file_limit)} per-file limit"
        )
    url = pypi_json.project_json_url(index.simple_url, name)
    why = f"{url} did not answer with PyPI's JSON API (unreachable, or {index.name} does not serve it)"
    usage: pypi_json.ProjectUsage | None
    try:
        usage = pypi_json.read_project_usage(index.simple_url, name, timeout)
    except pypi_json.Unavailable as exc:  # too slow, too large, too deep, not the API: said as it is
        usage, why = None, str(exc)
    if usage is not None and not usage.exists and present_on_index():
        usage = None  # the project is there but its JSON is not: an index without the API
    if usage is None:
        console.warn(f"could not check {name}'s project quota: {why}; uploading without the forecast")
        out["reason"] = f"no JSON API answer at {url}: {why}"
        return out
    adding = sum(w.size for w in todo)
    per_release = sum(w.size for w in release) or 1
    after = usage.total + adding
    left = max(0, (limit - after) // per_release)
    out.update(
        {
            "checked": True,
            "used": usage.total,
            "releases": len(usage.releases),
            "adding": adding,
            "after": after,
            "releases_left": left,
        }
    )
    if after > limit:
        raise PublishError(
            f"this release adds {console.size(adding)} to the {console.size(usage.total)} {name} already holds on "
            f"{index.name}: {console.size(after)}, over its {console.size(limit)} project limit; nothing was "
            "uploaded",
            REMEDIES,
        )
    if not console.json_mode():
        console.info(
            f"quota: {name} holds {console.size(usage.total)} in {len(usage.releases)} release(s) on {index.name}; "
            f"this release adds {console.size(adding)} -> {console.size(after)} of {console.size(limit)} "
            f"({100 * after / max(limit, 1):.0f}%); about {left} more release(s) of this size left"
        )
    return out
