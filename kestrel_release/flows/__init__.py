"""The flows that run or look across the whole pipeline and every target kind: release (build, verify, then
each target's publish), ci (the workflow), doctor (what each stage and target needs), explain, init.

They sit above the target kinds (targets/) they choose by name through the registry, which in turn sit above
the shared publish library (stages/publish); the commands (commands/) call them.
"""
