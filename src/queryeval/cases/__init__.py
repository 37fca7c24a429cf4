"""Test cases, system outputs and scores, and their loaders."""

from queryeval.cases._load import case_files, load_cases, load_cases_file
from queryeval.cases._model import (
    Answer,
    Attempt,
    Case,
    DatasetSelection,
    DimensionSelection,
    ExecutionOutcome,
    ExpectedResult,
    Finding,
    OutcomeKind,
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
    "OutcomeKind",
    "Output",
    "Query",
    "Score",
    "Target",
    "Term",
    "Turn",
    "case_files",
    "load_cases",
    "load_cases_file",
]
