"""Agentic and sampled query generation (seed 003): pass@k, success@k, LLMetric-Q."""
