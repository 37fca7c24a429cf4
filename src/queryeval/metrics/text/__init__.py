"""Similarity of query texts: BLEU, ROUGE-L, Jaro(-Winkler), Jaccard, exact match."""
