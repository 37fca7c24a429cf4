"""queryeval.judges."""
