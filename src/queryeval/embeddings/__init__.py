"""queryeval.embeddings."""
