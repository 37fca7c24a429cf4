"""queryeval.cli."""
