"""Test cases, system outputs and scores, and their loaders."""

from queryeval.cases._load import load_cases, load_cases_file
from queryeval.cases._model import (
    Answer,
    Attempt,
    Case,
    DatasetSelection,
    DimensionSelection,
    ExecutionOutcome,
    ExpectedResult,
    Finding,
    Output,
    Query,
    Score,
    Target,
    Term,
    Turn,
)

__all__ = [
    "Answer",
    "Attempt",
    "Case",
    "DatasetSelection",
    "DimensionSelection",
    "ExecutionOutcome",
    "ExpectedResult",
    "Finding",
    "Output",
    "Query",
    "Score",
    "Target",
    "Term",
    "Turn",
    "load_cases",
    "load_cases_file",
]
