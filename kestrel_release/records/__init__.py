"""Typed, versioned records: what crosses a process or a machine (the release manifest, the release
state, the `--json` documents), each a frozen dataclass with a `schema_version`, read and written by
one serializer (serde.py) and checked against the tool version that wrote it (versions.py).

Bottom layer: stdlib and errors only, so every stage, target and adapter may read them.
"""
