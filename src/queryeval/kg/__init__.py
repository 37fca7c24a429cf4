"""KG validity of Cypher queries (syntax, schema, properties) with CyVer over a neo4j driver.

Importing this package imports neither neo4j nor CyVer; a validator loads them when built.
"""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from queryeval.kg._context import kg_validator_from_context, validate_in_context
from queryeval.kg._validity import (
    Check,
    KGValidationError,
    KGValidator,
    KGValidity,
)

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "KGValidationError",
    "KGValidator",
    "KGValidity",
]
