"""Test cases, system outputs and scores, and their loaders."""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from queryeval.cases._load import (
    case_files,
    duplicate_case,
    load_cases,
    load_cases_file,
    parse_case_line,
)
from queryeval.cases._model import (
    Answer,
    Attempt,
    Case,
    CaseInfo,
    DatasetSelection,
    DimensionSelection,
    ExecutionOutcome,
    ExpectedResult,
    Finding,
    Output,
    Query,
    Score,
    Target,
    Task,
    TaskTest,
    Term,
    Turn,
)
from queryeval.cases._rule import (
    ENGINE_FAULTS,
    FAILURE_LABELS,
    QUERY_FAULTS,
    FailureReason,
    OutcomeKind,
    OutputFailure,
    describe_failures,
    failure_label,
)

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "Attempt",
    "Case",
    "DatasetSelection",
    "DimensionSelection",
    "ExecutionOutcome",
    "Output",
    "Query",
    "Score",
    "Term",
    "load_cases",
]
