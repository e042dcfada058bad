"""Reading [tool.kestrel-release]: load (defaults -> pyproject -> env -> flags), parse (every table, each
target kind's through the registry; all errors at once) and schema (the JSON Schema and the configuration
reference from the declarations in config/ and each kind's table).

Imported as `from kestrel_release.config_loader import load as config`.
"""
