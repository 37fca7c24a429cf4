"""queryeval.reports."""
