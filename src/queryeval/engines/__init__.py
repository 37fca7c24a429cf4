"""queryeval.engines."""
