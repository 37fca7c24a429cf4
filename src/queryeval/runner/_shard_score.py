"""The second pass of a large run: a worker scores one shard (a range of cases, every
system) with the one `score_output`, and returns the encoded records and the summary's
columns with each scorer's partial aggregate. The driver writes the records and joins the
columns in shard order, so the summary does not depend on which worker finished first.

`ScoreShard` is plain data (the suite and where the caches are), picklable for any
executor; the scorers and the scoring context are built once per process, on first use.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval._inputs import max_line_bytes
from queryeval.cases import Case, Output, Score, parse_case_line
from queryeval.log import encode_record
from queryeval.runner._pipeline import score_output
from queryeval.runner._ranges import numbered, range_lines
from queryeval.runner._shard_check import Shard, SystemPredictions
from queryeval.scorers import Scorer, ScoringContext, ShardableScorer, build_scorers
from queryeval.stats import RunColumns
from queryeval.systems import PredictionLine, TextFields, join_outputs, read_prediction_line

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig

_MISSING = "no prediction for this case"


@dataclass
class ShardResult:
    """A scored shard: its records as JSON lines, and its rows of the summary's columns."""

    index: int
    lines: bytes
    columns: RunColumns
    scored: int


@dataclass(frozen=True)
class ScoreShard:
    """The second pass's work on one shard (see the module docstring). `key` names the
    run, so a process that serves several runs builds each one's scorers once."""

    suite: SuiteConfig
    cache_dir: Path
    systems: tuple[str, ...]
    text_fields: TextFields
    key: str = ""

    def __call__(self, shard: Shard) -> ShardResult:
        scorers, ctx = _state(self)
        r = shard.cases
        cases = [
            parse_case_line(raw, r.path, shard.lines_before + number)
            for number, raw in numbered(range_lines(r.read(), r))
        ]
        for scorer in scorers.values():
            scorer.prepare(cases, ctx)
        lines: list[bytes] = []
        columns = RunColumns()
        for name in self.systems:
            done = shard.done.get(name, frozenset())
            outputs = read_outputs(shard.predictions[name], len(cases), self.text_fields)
            table = columns.system(name)
            kept: list[Case] = []
            scores: dict[str, list[Score]] = {label: [] for label in scorers}
            for case, output in zip(cases, outputs, strict=True):
                if done and case.id in done:
                    continue
                scored = score_output(name, case, output, scorers, ctx)
                lines.append(encode_record(scored.record))
                table.add(scored.record, scored.scores, keep_views=False)
                kept.append(case)
                for label, score in scored.scores.items():
                    scores[label].append(score)
            if kept:
                _aggregate(table.scorers, scorers, kept, scores)
        return ShardResult(shard.index, b"".join(lines), columns, len(lines))


def _aggregate(
    columns: Mapping[str, Any],
    scorers: Mapping[str, Scorer],
    cases: Sequence[Case],
    scores: Mapping[str, list[Score]],
) -> None:
    """Each scorer's partial aggregate of the shard (joined by the driver: `aggregate_of`)."""
    for label, scorer in scorers.items():
        assert isinstance(scorer, ShardableScorer), "a sharded run has no other scorers"
        columns[label].partials.append(scorer.aggregate_partial(cases, scores[label]))


_STATES: dict[str, tuple[dict[str, Scorer], ScoringContext]] = {}


def _state(work: ScoreShard) -> tuple[dict[str, Scorer], ScoringContext]:
    """This process's scorers and context for the run (built on first use)."""
    state = _STATES.get(work.key)
    if state is None:
        import_plugins(work.suite)  # a forked worker has them; a cluster's imports them
        ctx = ScoringContext(work.suite, cache_dir=work.cache_dir)
        state = _STATES[work.key] = (build_scorers(work.suite), ctx)
    return state


def import_plugins(suite: SuiteConfig) -> None:
    """The suite's `plugins:` modules (custom scorers), imported in this process as the
    suite's loader imported them in the driver's."""
    import importlib
    import sys

    if suite.plugins and str(suite.base_dir) not in sys.path:
        sys.path.insert(0, str(suite.base_dir))
    for module in suite.plugins:
        importlib.import_module(module)


def read_outputs(where: SystemPredictions, n: int, text_fields: TextFields) -> list[Output]:
    """The outputs of a shard's `n` cases, in case order, from their records' offsets
    (checked by the first pass: every record there is a well-formed line of a known case)."""
    path = where.path
    raws = _records(where, n)
    outputs: list[Output] = []
    for i in range(n):
        raw = raws[i]
        if raw is None:
            outputs.append(Output(error=_MISSING, failure="missing"))
            continue
        line = read_prediction_line(raw, path, where.lines[i], text_fields)
        more = where.more.get(i)
        if more is None:
            outputs.append(line.output)
            continue
        joined: list[tuple[int, PredictionLine]] = [(where.lines[i], line)]
        with path.open("rb") as f:
            for offset, number in more[1:]:
                joined.append((number, read_prediction_line(_line_at(f, offset), path, number)))
        outputs.append(join_outputs(joined))
    return outputs


def _records(where: SystemPredictions, n: int) -> list[bytes | None]:
    """Each case's (first) record line: one read of the span when the records follow the
    cases in order (a file written by a run over the cases), else one seek per record."""
    offsets = where.offsets
    present = [o for o in offsets if o >= 0]
    if not present:
        return [None] * n
    with where.path.open("rb") as f:
        if all(a < b for a, b in itertools.pairwise(present)):
            first = present[0]
            end = present[-1] + len(_line_at(f, present[-1])) + 1
            f.seek(first)
            span = f.read(end - first)
            out: list[bytes | None] = []
            for o in offsets:
                if o < 0:
                    out.append(None)
                    continue
                at = o - first
                stop = span.find(b"\n", at)
                out.append(span[at : stop if stop >= 0 else len(span)])
            return out
        return [None if o < 0 else _line_at(f, o) for o in offsets]


def _line_at(f: Any, offset: int) -> bytes:
    """The line that starts at `offset` (without its newline)."""
    f.seek(offset)
    return bytes(f.readline(max_line_bytes() + 1)).rstrip(b"\n")
