"""KG validity of Cypher queries (syntax, schema, properties) with CyVer over a neo4j driver.

Importing this package imports neither neo4j nor CyVer; a validator loads them when built.
"""

from queryeval.kg._context import kg_validator_from_context, validate_in_context
from queryeval.kg._validity import (
    Check,
    KGValidationError,
    KGValidator,
    KGValidity,
)

__all__ = [
    "Check",
    "KGValidationError",
    "KGValidator",
    "KGValidity",
    "kg_validator_from_context",
    "validate_in_context",
]
