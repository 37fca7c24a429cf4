"""Systems under test: saved predictions, a Python callable, a model behind an
OpenAI-compatible chat endpoint (`model:`), or a deployed HTTP service (`endpoint:`).

Live systems (callable, model, endpoint) share one small interface, `LiveSystem`:
`await system.generate(case) -> Output`, each owning its concurrency and timeouts.
"""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from typing import TYPE_CHECKING, Any

from queryeval.systems._build import (
    LiveSystem,
    SystemProblem,
    attach_systems,
    build_system,
    check_system,
    check_systems,
)
from queryeval.systems._callable import CallableSystem, coerce_output, import_callable
from queryeval.systems._endpoint import EndpointSystem, read_path, render_body
from queryeval.systems._estimate import SystemEstimate, estimate_systems
from queryeval.systems._predictions import (
    ANSWER,
    CaseOutputs,
    PredictionLine,
    PredictionsFile,
    TextFields,
    empty_predictions,
    join_outputs,
    parse_output,
    parse_prediction_line,
    prediction_key,
    read_prediction_line,
    repeated_record,
    text_fields_for,
    unknown_case,
)
from queryeval.systems._prompt import PromptTemplate, builtin_prompt, load_prompt
from queryeval.systems._reply import ReadOutput, read_output
from queryeval.systems._task import CaseTask, case_database, case_task

if TYPE_CHECKING:
    from queryeval.systems._model import ModelSystem


def __getattr__(name: str) -> Any:
    # `ModelSystem` on first use: it brings asyncio and the LLM client (about 35 ms of a
    # process's start), which a run of saved predictions does not need
    if name == "ModelSystem":
        from queryeval.systems._model import ModelSystem

        return ModelSystem
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "CallableSystem",
    "EndpointSystem",
    "LiveSystem",
    "ModelSystem",
    "PredictionsFile",
    "PromptTemplate",
    "build_system",
    "builtin_prompt",
    "check_systems",
    "load_prompt",
    "text_fields_for",
]
