"""The one format of a printed byte count; pure, so rules that only build messages need no console."""

from __future__ import annotations

_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def size(n: float, unit: str | None = None) -> str:
    """A byte count as people read it, the one format of every printed size: `10 B`, `6.0 KiB`,
    `1.5 MiB`, `10.0 GiB` (the largest unit it reaches, one decimal). `unit` fixes the unit, for a
    table column that should read in one ("0.1 MiB")."""
    if unit is None:
        unit = next((u for u in ("GiB", "MiB", "KiB") if n >= _UNITS[u]), "B")
    return f"{n:.0f} B" if unit == "B" else f"{n / _UNITS[unit]:.1f} {unit}"
