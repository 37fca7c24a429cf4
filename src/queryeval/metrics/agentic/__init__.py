"""Agentic and sampled query generation (seed 003): pass@k, success@k, KG validity, recovery,
error types, and the LLMetric-Q composite with its result terms.

`pass_at_k(n, c, k)` is the unbiased HumanEval estimator over n independent samples;
`success_at_k(correct, k)` says whether a refinement loop was right within k iterations.
`agentic_report(cases, *, ks)` computes the whole seed table from per-attempt flags or
recorded `Output`s.
"""

from queryeval.metrics.agentic._attempts import (
    KG_CHECKS,
    AgenticReport,
    AttemptSummary,
    agentic_report,
    kg_valid,
    primary_error,
    recovery_rate,
    summarize_attempt,
    summarize_output,
)
from queryeval.metrics.agentic._llmetric import (
    LLMETRIC_Q_WEIGHTS,
    jaccard_output,
    jarou,
    llmetric_q,
    pass_at_1_output,
)
from queryeval.metrics.agentic._passk import (
    first_success,
    mean_pass_at_k,
    pass_at_k,
    success_at_k,
)

__all__ = [
    "KG_CHECKS",
    "LLMETRIC_Q_WEIGHTS",
    "AgenticReport",
    "AttemptSummary",
    "agentic_report",
    "first_success",
    "jaccard_output",
    "jarou",
    "kg_valid",
    "llmetric_q",
    "mean_pass_at_k",
    "pass_at_1_output",
    "pass_at_k",
    "primary_error",
    "recovery_rate",
    "success_at_k",
    "summarize_attempt",
    "summarize_output",
]
