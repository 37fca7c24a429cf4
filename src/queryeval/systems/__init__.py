"""queryeval.systems."""
