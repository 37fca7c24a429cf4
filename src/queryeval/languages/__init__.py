"""What queryeval knows about each query language: tokens, read-only checks, ordering."""
