"""The configuration's declarations: each setting declared once (model, tables, defaults), one value's
parsing (values, variants) and the settings table derived from them (settings).

Reading a pyproject is config_loader's (it asks each target kind to parse its own table, so it sits above
targets/); a stage or a target reads the dataclasses from config.model without importing the loader.
"""
