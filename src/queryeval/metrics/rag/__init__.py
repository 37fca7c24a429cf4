"""RAG answers (seed 004): keyword scoring and similarity-threshold calibration."""
