"""A build's output directory: moving a build's files in (outputs), its release manifest and SHA256SUMS
(manifest), the project it holds (identity) and the configuration it was built under (built_with)."""
