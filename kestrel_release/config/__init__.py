"""The configuration: each setting declared once (model, tables, defaults), read (load, parse, values,
variants) and described (settings, schema: the JSON Schema and the configuration reference).

Empty on purpose: a stage reads the dataclasses from config.model without importing the loader.
"""
