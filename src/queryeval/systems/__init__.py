"""Systems under test: saved predictions or a Python callable."""

from queryeval.systems._callable import CallableSystem, coerce_output, import_callable
from queryeval.systems._predictions import (
    PredictionsFile,
    parse_output,
    parse_prediction_line,
)

__all__ = [
    "CallableSystem",
    "PredictionsFile",
    "coerce_output",
    "import_callable",
    "parse_output",
    "parse_prediction_line",
]
