"""Reproducible timings of kestrel-release against the seed's loop and today's tools (see README.md)."""
