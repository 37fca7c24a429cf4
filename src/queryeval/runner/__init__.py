"""queryeval.runner."""
