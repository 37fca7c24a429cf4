"""LLM-as-judge: an OpenAI-compatible client with rubrics as data, a judgment cache,
retries, an adaptive concurrency limit and a spend cap.

Nothing here touches the network on import; the `openai` SDK is imported on first call.
"""

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

__all__ = [
    "HOW_TO_CONFIGURE",
    "Estimate",
    "Judge",
    "JudgeConfig",
    "JudgeRequest",
    "JudgeStats",
    "ParsedReply",
    "Price",
    "Rubric",
    "Verdict",
    "build_judge",
    "builtin_rubric",
    "builtin_rubric_names",
    "estimate_requests",
    "judge_config",
    "judge_from_context",
    "load_rubric",
    "parse_reply",
]
