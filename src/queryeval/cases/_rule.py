"""The scoring rule's vocabulary: what counts against the system, what is the evaluator's.

**What the system under test produced is its responsibility.** Whatever it produced that
cannot be used (nothing, something empty or unreadable, a write, a query the engine rejects,
a crash, a timeout, a query over a resource limit) is a *failure*: the case fails and the
failure counts as 0 in every mean, sub-metric, pass rate and gate. A failure is a `Score`
with status `ok`, value 0, `passed` false and `details["failure"]` naming the reason, so
every average takes it in without special cases.

**Only the evaluator's own trouble is `unscored`** (never averaged, always counted): a judge
that cannot be reached or gives no readable verdict, an engine not configured, a gold that
fails, and a query that is valid in its language but that the embedded engine cannot run,
when that validity is established independently (see `queryeval.engines.check_validity`).
When it cannot be established, the case is a failure with reason `engine_could_not_run`,
reported apart because the figure may understate the system.

`error` is a scorer's own breakage (it raised): counted, never averaged, and a run where a
scorer breaks on more than a small share of the cases stops with exit code 2.
"""

from __future__ import annotations

from typing import Literal

OutcomeKind = Literal[
    "ok",
    # the query's own fault
    "syntax",
    "schema",
    "runtime",
    "timeout",
    "resource_limit",
    "refused",
    # the engine's: it cannot run the query (a construct it lacks) or broke while running it
    "unsupported",
    "engine_error",
]

FailureReason = Literal[
    "missing",  # no prediction, no attempt
    "empty",  # an attempt whose output is empty
    "invalid_output",  # unreadable, the wrong type, not what the task asks for
    "crashed",  # the system raised or reported an error
    "system_timeout",  # the system did not answer in time
    "refused",  # a write, or more than one read statement
    "syntax",
    "schema",
    "runtime",
    "timeout",  # the query ran past the time limit
    "resource_limit",  # the query ran past a memory or size limit of the engine
    "engine_could_not_run",  # the engine could not run it; its validity is not established
]

# What an Output-level error says about the system (set by the systems layer).
OutputFailure = Literal["missing", "crashed", "system_timeout", "invalid_output"]

QUERY_FAULTS: frozenset[str] = frozenset(
    {"syntax", "schema", "runtime", "timeout", "resource_limit", "refused"}
)
ENGINE_FAULTS: frozenset[str] = frozenset({"unsupported", "engine_error"})

FAILURE_LABELS: dict[str, str] = {
    "missing": "missing",
    "empty": "empty output",
    "invalid_output": "invalid output",
    "crashed": "system crashed",
    "system_timeout": "system timed out",
    "refused": "write or not a query",
    "syntax": "syntax error",
    "schema": "schema error",
    "runtime": "runtime error",
    "timeout": "timeout",
    "resource_limit": "resource limit",
    "engine_could_not_run": "engine could not run",
}

# Reported apart: the figure may understate the system (its validity was not established).
UNDERSTATING: frozenset[str] = frozenset({"engine_could_not_run"})


def failure_label(reason: str) -> str:
    """The words a report uses for a failure reason (`invalid_output` -> `invalid output`).

    >>> failure_label("engine_could_not_run")
    'engine could not run'
    """
    return FAILURE_LABELS.get(reason, reason.replace("_", " "))


def describe_failures(counts: dict[str, int]) -> str:
    """`invalid output: 7, missing: 2, timeout: 1`, largest first, with the reasons that
    may understate the system apart.

    >>> describe_failures({"missing": 2, "invalid_output": 7, "engine_could_not_run": 1})
    'invalid output: 7, missing: 2; engine could not run: 1 (may understate)'
    """
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    main = [f"{failure_label(r)}: {n}" for r, n in ordered if r not in UNDERSTATING and n]
    apart = [f"{failure_label(r)}: {n} (may understate)" for r, n in ordered if r in UNDERSTATING]
    return "; ".join(p for p in (", ".join(main), ", ".join(apart)) if p)
