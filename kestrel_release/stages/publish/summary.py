"""publish's table for a CI job's summary page (ci_output writes it; nothing outside CI).

Every target's result has its own shape (an index's uploaded/skipped rows, a GitHub release's asset
actions, a static index's files); this reads the result's `to_json()`, the one shape they all promise.
"""

from __future__ import annotations

from typing import Any

from kestrel_release.ui import ci_output, sizes


def publish(target: str, result: Any) -> None:
    """Append the publish table of `result` (any target's) to the job summary."""
    if ci_output.active() and hasattr(result, "to_json"):
        ci_output.summary(markdown(target, result.to_json()))


def markdown(target: str, doc: dict[str, Any]) -> str:
    rows = _rows(doc)
    dry = " (dry run)" if doc.get("dry_run") else ""
    where = doc.get("release_url") or doc.get("upload_url") or doc.get("root") or ""
    title = f"### kestrel-release publish to {target}{dry}" + (f": {where}" if where else "")
    if not rows:
        return f"{title}\n\nnothing to publish."
    return f"{title}\n\n" + ci_output.table(("file", "action", "size"), rows)


def _rows(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    if isinstance(doc.get("actions"), list):  # a GitHub release: one action per asset
        return [(a["name"], a["action"], sizes.size(a["size"]) if a.get("size") else "") for a in doc["actions"]]
    rows = []
    for action in ("uploaded", "skipped", "failed", "left_out"):
        for item in doc.get(action) or []:
            item = item if isinstance(item, dict) else {"filename": str(item)}
            name = item.get("filename") or item.get("name") or "?"
            size = sizes.size(item["size"]) if isinstance(item.get("size"), int) else ""
            rows.append((name, action.replace("_", " "), size))
    return rows
