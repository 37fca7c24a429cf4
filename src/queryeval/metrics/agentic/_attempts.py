"""Metrics of self-refining query generation (seed 003): Pass@1, success@k, EX, KG Valid@1/@k,
refinement gain, recovery rate, iterations to success and error types.

Works on plain values (one list of per-attempt correctness flags per case) or on
`queryeval.cases.Output` attempts, through `AttemptSummary`. Unknown values (None) are left
out of the rates that need them, never counted as failures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from queryeval.cases import Attempt, Output
from queryeval.metrics.agentic._passk import first_success, mean_pass_at_k, success_at_k

# Error types in the order that decides an attempt's primary error (the seed's ErrorType).
KG_CHECKS = ("syntax", "schema", "properties")
ERROR_TYPES = (*KG_CHECKS, "execution", "wrong_result")
_OUTCOME_ERROR = {"syntax": "syntax", "schema": "schema"}  # other failed outcomes: execution


def _check_report(cases: Any, ks: Sequence[int]) -> None:
    """A TypeError unless `cases` is a sequence of attempt lists or Outputs; a ValueError
    unless every k is an int >= 1."""
    if isinstance(cases, str | bytes | Mapping) or not isinstance(cases, Sequence):
        raise TypeError(f"cases must be a sequence of attempt lists, not {type(cases).__name__}")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"every k must be an int >= 1, got {k!r}")


@dataclass(frozen=True)
class AttemptSummary:
    """What the agentic metrics need from one attempt."""

    correct: bool | None
    kg_valid: bool | None = None
    error_type: str | None = None


def finding_failed(score: float | None) -> bool:
    """A finding fails unless it carries a score of 1 (a finding reported without a score
    is a problem; "not applicable" checks are recorded with score 1)."""
    return score is None or score < 1.0


def kg_valid(attempt: Attempt) -> bool | None:
    """KG validity (kg-axel): syntax and schema checks score 1 and the properties check
    scores 1 or is not applicable. None when no syntax/schema finding says it was checked.
    Execution errors do not enter: they are runtime problems, not structural ones.

    >>> from queryeval.cases import Attempt, Finding
    >>> checked = [Finding(kind="syntax", score=1.0), Finding(kind="schema", score=1.0)]
    >>> kg_valid(Attempt(findings=checked)), kg_valid(Attempt())
    (True, None)
    """
    kinds = {f.kind: f for f in attempt.findings if f.kind in KG_CHECKS}
    if any(finding_failed(f.score) for f in kinds.values()):
        return False
    if "syntax" in kinds and "schema" in kinds:
        return True
    return None


def primary_error(attempt: Attempt) -> str | None:
    """The attempt's main error type: a failed syntax, schema or properties finding (in that
    order), else a failed execution, else "wrong_result" for a valid query with a wrong
    result; None when the attempt is correct or nothing is known.

    >>> from queryeval.cases import Attempt, Finding
    >>> primary_error(Attempt(findings=[Finding(kind="schema", score=0.0)], correct=False))
    'schema'
    >>> primary_error(Attempt(correct=False)), primary_error(Attempt(correct=True))
    ('wrong_result', None)
    """
    failed = {f.kind for f in attempt.findings if finding_failed(f.score)}
    for kind in KG_CHECKS:
        if kind in failed:
            return kind
    outcome = attempt.execution
    if outcome is not None and outcome.kind != "ok":
        return _OUTCOME_ERROR.get(outcome.kind, "execution")
    if "execution" in failed:
        return "execution"
    if attempt.correct is False:
        return "wrong_result"
    return None


def summarize_attempt(attempt: Attempt) -> AttemptSummary:
    """The AttemptSummary of a recorded attempt.

    >>> from queryeval.cases import Attempt
    >>> summarize_attempt(Attempt(correct=False))
    AttemptSummary(correct=False, kg_valid=None, error_type='wrong_result')
    """
    error = None if attempt.correct is True else primary_error(attempt)
    return AttemptSummary(correct=attempt.correct, kg_valid=kg_valid(attempt), error_type=error)


def summarize_output(output: Output) -> list[AttemptSummary]:
    """The AttemptSummary of every attempt of an output, in order.

    >>> from queryeval.cases import Attempt, Output
    >>> [a.correct for a in summarize_output(Output(attempts=[Attempt(correct=False),
    ...                                                        Attempt(correct=True)]))]
    [False, True]
    """
    return [summarize_attempt(a) for a in output.attempts]


def _as_summary(a: AttemptSummary | bool | None) -> AttemptSummary:
    return a if isinstance(a, AttemptSummary) else AttemptSummary(correct=a)


def _rate(flags: Iterable[bool | None]) -> tuple[float | None, int]:
    """Share of True among the known flags, and how many were known."""
    known = [f for f in flags if f is not None]
    return (sum(known) / len(known) if known else None), len(known)


def recovery_rate(pass_at_1: float | None, success: float | None) -> float | None:
    """The seed's recovery rate (Self-Refine): (success@k - Pass@1) / (1 - Pass@1); None
    when every case passed at once (the seed reports 0 there).

    >>> recovery_rate(0.5, 0.75)
    0.5
    """
    if pass_at_1 is None or success is None or pass_at_1 >= 1.0:
        return None
    return (success - pass_at_1) / (1.0 - pass_at_1)


@dataclass(frozen=True)
class AgenticReport:
    """Dataset-level agentic metrics, all rates in [0, 1] (the seed prints percent)."""

    cases: int
    pass_at_1: float | None
    success_at_k: dict[int, float | None]
    success: float | None  # within all iterations (the seed's "Pass@k" with k = max)
    execution_accuracy: float | None  # final attempt correct (EX)
    refinement_gain: float | None
    recovery_rate: float | None
    recovered: int
    initially_failed: int
    recovery_rate_counts: float | None
    kg_valid_at_1: float | None
    kg_valid_at_k: float | None
    kg_refinement_gain: float | None
    kg_recovery_rate: float | None
    mean_iterations: float | None
    max_iterations: int
    iterations_to_success: dict[int, int]
    success_curve: list[float | None]
    error_types: dict[str, int]
    first_error_types: dict[str, int]
    recovery_by_error_type: dict[str, float | None]
    pass_at_k: dict[int, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """A JSON-able dict of every figure (integer keys, such as k, become strings)."""

        def plain(value: object) -> object:
            if isinstance(value, dict):
                return {str(k): plain(v) for k, v in value.items()}
            return value

        return {name: plain(getattr(self, name)) for name in self.__dataclass_fields__}


def agentic_report(
    cases: Sequence[Sequence[AttemptSummary | bool | None] | Output],
    *,
    ks: Sequence[int] = (1, 3, 5),
    samples: bool = False,
) -> AgenticReport:
    """Agentic metrics over cases, each the ordered attempts of one refinement loop (or, with
    `samples=True`, n independent samples, for which the unbiased pass@k is added).

    Pass@1 = first attempt correct; success@k = correct within the first k attempts; EX =
    final attempt correct; refinement gain = success - Pass@1; recovery rate = (success -
    Pass@1) / (1 - Pass@1), also as recovered / initially failed (the two agree); KG Valid@1
    / @k = first / final attempt KG-valid.

    >>> r = agentic_report([[True], [False, True], [False, False, False]], ks=(1, 2))
    >>> r.pass_at_1, r.success_at_k[2], round(r.recovery_rate, 6), r.recovered
    (0.3333333333333333, 0.6666666666666666, 0.5, 1)
    """
    _check_report(cases, ks)
    loops = [
        summarize_output(c) if isinstance(c, Output) else [_as_summary(a) for a in c] for c in cases
    ]
    correct = [[a.correct for a in loop] for loop in loops]
    first = [c[0] if c else False for c in correct]
    final = [c[-1] if c else False for c in correct]
    success = [success_at_k(c) if c else False for c in correct]
    pass_1, _ = _rate(first)
    succ, _ = _rate(success)
    both = [(f, s) for f, s in zip(first, success, strict=True) if f is not None and s is not None]
    initially_failed = sum(1 for f, _ in both if not f)
    recovered = sum(1 for f, s in both if not f and s)

    kg_first = [loop[0].kg_valid if loop else False for loop in loops]
    kg_final = [loop[-1].kg_valid if loop else False for loop in loops]
    kg_1, _ = _rate(kg_first)
    kg_k, _ = _rate(kg_final)

    lengths = [len(loop) for loop in loops]
    max_iter = max(lengths, default=0)
    firsts = [first_success(c) for c in correct]
    errors: Counter[str] = Counter()
    for loop in loops:
        errors.update(a.error_type for a in loop if a.correct is not True and a.error_type)
    first_errors: Counter[str] = Counter()
    first_error_recovered: Counter[str] = Counter()
    for loop, s in zip(loops, success, strict=True):
        if loop and loop[0].correct is False and loop[0].error_type:
            first_errors[loop[0].error_type] += 1
            first_error_recovered[loop[0].error_type] += bool(s)

    pass_k: dict[int, float | None] = {}
    if samples:
        for k in ks:
            usable = [[bool(x) for x in c] for c in correct if len(c) >= k and None not in c]
            pass_k[k] = mean_pass_at_k(usable, k)
    return AgenticReport(
        cases=len(loops),
        pass_at_1=pass_1,
        success_at_k={k: _rate(success_at_k(c, k) if c else False for c in correct)[0] for k in ks},
        success=succ,
        execution_accuracy=_rate(final)[0],
        refinement_gain=None if succ is None or pass_1 is None else succ - pass_1,
        # The seed's formula on the cases where both are known, so that it equals the count form.
        recovery_rate=recovery_rate(
            sum(f for f, _ in both) / len(both) if both else None,
            sum(s for _, s in both) / len(both) if both else None,
        ),
        recovered=recovered,
        initially_failed=initially_failed,
        recovery_rate_counts=recovered / initially_failed if initially_failed else None,
        kg_valid_at_1=kg_1,
        kg_valid_at_k=kg_k,
        kg_refinement_gain=None if kg_1 is None or kg_k is None else kg_k - kg_1,
        kg_recovery_rate=_kg_recovery(kg_first, kg_final),
        mean_iterations=sum(lengths) / len(lengths) if lengths else None,
        max_iterations=max_iter,
        iterations_to_success=dict(sorted(Counter(i for i in firsts if i is not None).items())),
        success_curve=[
            _rate(success_at_k(c, i) if c else False for c in correct)[0]
            for i in range(1, max_iter + 1)
        ],
        error_types=_ordered(errors),
        first_error_types=_ordered(first_errors),
        recovery_by_error_type={
            e: first_error_recovered[e] / n for e, n in _ordered(first_errors).items()
        },
        pass_at_k=pass_k,
    )


def _kg_recovery(first: Sequence[bool | None], final: Sequence[bool | None]) -> float | None:
    """Share of cases KG-invalid at the first attempt that are KG-valid at the final one."""
    invalid = [f for s, f in zip(first, final, strict=True) if s is False and f is not None]
    return sum(bool(f) for f in invalid) / len(invalid) if invalid else None


def _ordered(counts: Mapping[str, int]) -> dict[str, int]:
    """Counts in the ERROR_TYPES order, unknown types after them alphabetically."""
    rank = {e: i for i, e in enumerate(ERROR_TYPES)}
    return {e: counts[e] for e in sorted(counts, key=lambda e: (rank.get(e, len(rank)), e))}
