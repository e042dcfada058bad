"""The commands: one module per command or command group, each registering it on cli.py's app (`register`).

A command module parses the flags, loads the config, calls one stage's run and renders its result; the
stage is imported inside the command function, so that `--help` imports no stage. cli.py lists these
modules and imports only the one a run names.
"""
