"""The pipeline's stages, one package or module each: build_wheels, verify, assemble, version, and publish
(the shared publish library every target kind calls). They never import the target kinds (targets/) nor the
flows that choose targets (flows/): data comes in as the Config dataclasses and plain records."""
