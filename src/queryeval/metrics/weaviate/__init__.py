"""Weaviate query ASTs (seed 000): parsing tool calls and code, and scoring them."""
