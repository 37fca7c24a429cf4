"""LLM-as-judge: an OpenAI-compatible client with rubrics as data, a judgment cache,
retries, an adaptive concurrency limit and a spend cap.

Nothing here touches the network on import; the `openai` SDK is imported on first call.
"""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from queryeval.judges._config import JudgeConfig, Price
from queryeval.judges._context import (
    HOW_TO_CONFIGURE,
    build_judge,
    judge_config,
    judge_from_context,
)
from queryeval.judges._estimate import Estimate, estimate_requests
from queryeval.judges._judge import Judge, JudgeRequest, JudgeStats
from queryeval.judges._parse import ParsedReply, parse_reply
from queryeval.judges._rubric import Rubric, builtin_rubric, builtin_rubric_names, load_rubric
from queryeval.judges._verdict import Verdict

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "Judge",
    "JudgeConfig",
    "Rubric",
    "Verdict",
    "build_judge",
    "builtin_rubric",
    "builtin_rubric_names",
    "load_rubric",
]
