"""Comparing query results (SQL, KQL, Cypher outputs): the comparator and its parts."""
