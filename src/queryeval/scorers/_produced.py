"""What the system produced, judged once for every scorer: the rule of `queryeval.cases._rule`
applied before a scorer compares anything.

`check_output(scorer, case, output, ctx)` returns a failure `Score` when the part of the
output the scorer reads (`Scorer.reads`) cannot be used, else None:

- the system failed (`Output.failure` / `Output.error` with no attempt): missing, crashed,
  timed out, an output of the wrong type;
- no attempt (`missing`), or the attempt's field empty (`empty`);
- an answer without a single word (`invalid_output`: `{`, punctuation);
- a text that is not valid Unicode (`invalid_output`: an unpaired UTF-16 surrogate, which a
  JSON escape can produce and no encoder, tokenizer or report can take);
- a query in a markdown code fence (`invalid_output`: the system must return the query
  itself; nothing is stripped, as Spider's and BIRD's scripts strip nothing, and in KQL a
  fenced text is a valid string literal that would "run");
- a query: run on the case's database (once per run, shared with the execution scorers) and
  judged by `queryeval.engines.blame` (`refused`, `syntax`, `schema`, `runtime`, `timeout`,
  `resource_limit`, `engine_could_not_run`); with no database, what can be told without
  one: a query text past the engines' default `max_query_bytes` (never parsed), a write
  (the sandbox's parser) or a query the independent validity check rejects.

A query the engine cannot run but that is valid by the independent check passes here: a
text metric still compares it, and the execution scorers leave the case unscored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from queryeval._unicode import unpaired_surrogate
from queryeval.cases import Case, Output, Score, failure_label

if TYPE_CHECKING:
    from queryeval.cases import Attempt
    from queryeval.scorers._base import Scorer, ScoringContext

_WHAT = {
    "query": "query",
    "weaviate": "Weaviate query",
    "indicator_selection": "indicator selection",
    "answer": "answer",
}


def output_failure(output: Output) -> Score | None:
    """The failure of a system that produced no usable output at all (missing, crashed,
    timed out, wrong type), or None."""
    if output.failure is None and not (output.error and not output.attempts):
        return None
    reason = output.failure or "crashed"
    why = output.error or failure_label(reason)
    return Score.failure(reason, f"system error: {why}", system_error=output.error)


def check_output(scorer: Scorer, case: Case, output: Output, ctx: ScoringContext) -> Score | None:
    """A failure Score when what `scorer` reads of `output` cannot be used, else None."""
    failed = output_failure(output)
    if failed is not None:
        return failed
    reads = scorer.reads
    if not output.attempts:
        return Score.failure("missing", "no attempt was produced")
    if reads in ("output", "attempts"):
        return None
    attempt = output.first if scorer.attempt_choice == "first" else output.final
    assert attempt is not None
    value: Any
    if reads == "weaviate":
        value = attempt.weaviate_query if attempt.weaviate_query is not None else attempt.query
    else:
        value = getattr(attempt, reads, None)
    if value is None or (isinstance(value, str) and not value.strip()):
        return Score.failure("empty", f"no {_WHAT.get(reads, reads)} was produced")
    if (where := _surrogate_in(value)) is not None:
        return Score.failure(
            "invalid_output",
            f"the {_WHAT.get(reads, reads)} is not valid Unicode: an unpaired surrogate {where}",
        )
    if reads == "answer" and not any(ch.isalnum() for ch in str(value)):
        return Score.failure("invalid_output", "the answer has no words")
    if reads == "query":
        if str(value).lstrip().startswith("```"):  # KQL would even run it, as a string
            return Score.failure(
                "invalid_output",
                "the output is a markdown code block, not a query: a system must return "
                "the query itself",
            )
        return query_failure(scorer, case, attempt, ctx)
    return None


def _surrogate_in(value: Any) -> str | None:
    """Where an unpaired surrogate sits in a text, or in any text of a structure (a
    Weaviate query, a selection); None where there is none.

    >>> _surrogate_in([{"id": "ok"}]), _surrogate_in([{"id": "bad \\ud800"}])
    (None, 'in item 0')
    """
    if isinstance(value, str):
        at = unpaired_surrogate(value)
        return None if at is None else f"at character {at}"
    if type(value) is list or type(value) is dict:
        # orjson checks every text and key of a JSON structure in C, ten times faster than
        # the walk below, which then only says where (or takes what orjson cannot write)
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
        else:
            return None
    return _surrogate_at(value)


def _surrogate_at(value: Any) -> str | None:
    if isinstance(value, str):
        at = unpaired_surrogate(value)
        return None if at is None else f"at character {at}"
    if isinstance(value, dict):
        for key, item in value.items():
            if (isinstance(key, str) and unpaired_surrogate(key) is not None) or (
                _surrogate_at(item) is not None
            ):
                return f"under {key!r}"
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if _surrogate_at(item) is not None:
                return f"in item {i}"
    return None


def query_failure(
    scorer: Scorer, case: Case, attempt: Attempt, ctx: ScoringContext
) -> Score | None:
    """The failure of a predicted query, judged on the case's database, or without one by
    what needs no database; None when it ran (or is valid, or cannot be told)."""
    from queryeval.scorers.execution import case_database

    query = str(attempt.query)
    databases = ctx.suite.databases if ctx.suite is not None else {}
    named = getattr(attempt, "database", None)
    if named is not None and str(named) not in databases:
        return Score.failure("schema", f"the prediction names an unknown database {named!r}")
    database = str(named) if named else case_database(case, scorer.database_option, ctx)
    if database is not None and database in databases and scorer.judged_by_execution:
        execution, fault = ctx.run_prediction(database, query)
        if fault.party != "system":
            return None
        o = execution.outcome
        details = {"execution": {"database": database, "kind": o.kind, "message": o.message,
                                 "elapsed_s": o.elapsed_s}}  # fmt: skip
        return Score.failure(
            fault.reason,  # type: ignore[arg-type]
            f"{failure_label(fault.reason)}: {fault.message}",
            **details,
        )
    return _without_database(case, attempt, query)


def _without_database(case: Case, attempt: Attempt, query: str) -> Score | None:
    """What can be told of a query with no database: a write, or an invalid query by the
    language's independent checker."""
    from queryeval.engines import Limits, check_validity

    cap = Limits().max_query_bytes  # no database, no options: the engines' default
    if len(query) > cap // 4 and len(query.encode("utf-8", "surrogatepass")) > cap:
        message = f"the query is longer than {cap:,} bytes (max_query_bytes); not parsed"
        return Score.failure("resource_limit", f"{failure_label('resource_limit')}: {message}")
    language = (attempt.language or _gold_language(case) or "sql").lower()
    refusal = _refusal(language, query)
    if refusal is not None:
        return Score.failure("refused", f"{failure_label('refused')}: {refusal}")
    verdict = check_validity(language, query)
    if verdict.validity == "invalid":
        reason = verdict.kind or "syntax"
        return Score.failure(reason, f"{failure_label(reason)}: {verdict.message}")
    return None


def _gold_language(case: Case) -> str | None:
    for target in case.targets:
        language = getattr(target.query, "language", None)
        if language:
            return str(language)
    return None


def _refusal(language: str, query: str) -> str | None:
    """The sandbox parser's reason to refuse `query`, when its language has one installed."""
    from queryeval.languages import read_only_refusal

    try:
        return read_only_refusal(query, language)
    except (ValueError, ImportError, RecursionError):  # unknown here, no parser, too deep
        return None
