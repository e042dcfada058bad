"""The shared publish library: what every target kind's publish uses (kestrel_release/targets/ imports it).

snapshot (the build output checked unchanged), uploads (parallel, resumable byte transfers), confirm (the one
y/N before an irreversible upload), summary (a CI job's summary page), quota, python_select (publish --python),
smoke (install + import after a publish; smoke_explain, smoke_reuse). Nothing here knows a target kind or
imports the registry: a kind's own code lives in its package under targets/.
"""
