"""Verified verdicts: database variants derived from a database and two queries, where
execution match on one database may be fooled (issue 29; docs/verified.md)."""
