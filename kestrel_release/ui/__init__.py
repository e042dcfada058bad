"""What the user sees: the one console (console), step progress (progress), printed sizes (sizes), CI
groups, annotations and summaries (ci_output), and secret masking in all of it (redact)."""
