"""Test-only scorers and a system for the report tests (imported through a suite's
`plugins:`): an engine-like scorer with execution outcomes and aggregate families, and a
judge-like scorer with reasoning that is sometimes unavailable."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from queryeval.cases import Case, Output, Score
from queryeval.scorers import Scorer, ScoringContext, register_scorer

KINDS = ("ok", "ok", "ok", "syntax", "schema", "timeout")


def _n(case: Case) -> int:
    return int(case.id.split("-")[-1])


def _expected(case: Case) -> str:
    target = case.target
    assert target is not None and target.answer is not None and not isinstance(target.answer, str)
    return target.answer.text


@register_scorer("test_exec_match")
class ExecMatch(Scorer):
    """1 when the answer is the expected one; records an execution outcome in details."""

    default_threshold = 1.0

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        got = output.final.answer if output.final else None
        kind = KINDS[_n(case) % len(KINDS)] if got != _expected(case) else "ok"
        value = 1.0 if got == _expected(case) else 0.0
        return Score(
            value=value,
            explanation="" if value else f"rows differ <b>{case.id}</b>",
            details={
                "metrics": {"row_f1": value, "row_recall": 1.0 if kind == "ok" else 0.0},
                "execution": {"predicted": {"kind": kind, "message": f"{kind} on {case.id}"}},
                "counts": {"rows": _n(case) % 7},
            },
        )

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        errors: dict[str, int] = {}
        for s in scores:
            kind = s.details.get("execution", {}).get("predicted", {}).get("kind")
            if kind and kind != "ok":
                errors[kind] = errors.get(kind, 0) + 1
        ok = [s.value for s in scores if s.value is not None]
        mean = sum(ok) / len(ok) if ok else 0.0
        return {
            "error_types": errors,
            "families": {
                "select": {"mean": mean, "n": len(ok)},
                "filter": {"mean": mean / 2, "n": len(ok)},
            },
        }

    def report_columns(self, score: Score) -> dict[str, Any]:
        return {"row f1": score.details.get("metrics", {}).get("row_f1")}


@register_scorer("test_judge")
class JudgeLike(Scorer):
    """A verdict with reasoning; every 5th case the 'judge' is unavailable (unscored)."""

    default_threshold = 0.5

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        if _n(case) % 5 == 4:
            return Score.unscored("judge unavailable: HTTP 503")
        got = output.final.answer if output.final else None
        right = got == _expected(case)
        return Score(
            value=0.9 if right else 0.2,
            details={
                "reasoning": f"The answer {'matches' if right else 'contradicts'} the "
                f"reference for {case.id}. " + "Long reasoning. " * 30,
                "verdict": "correct" if right else "incorrect",
                "cached": False,
            },
        )


def answer_system(case: Case, *, skill: float, style: str) -> dict[str, Any]:
    """Right when the case number's position in 10 is below skill*10; costs by style."""
    n = _n(case)
    right = (n % 10) < skill * 10
    if style == "crash" and n == 3:
        raise RuntimeError("model exploded")
    return {
        "answer": _expected(case) if right else "wrong",
        "query": f"SELECT answer FROM t WHERE id = {n}",
        "latency_s": 0.1 + n / 100,
        "cost": 0.001 * (1 + n % 4) * (2 if style == "b" else 1),
    }


def make_suite(folder: Path, n: int = 40) -> Path:
    """A grid suite (skill x style) over n cases with both test scorers and every report."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w") as f:
        for i in range(n):
            case = {
                "id": f"case-{i}",
                "name": f"case {i}",
                "tags": ["even" if i % 2 == 0 else "odd", f"bucket-{i % 3}"],
                "conversation": [
                    {
                        "content": f"What is answer {i}? </script><b>x</b>",
                        "target": {"answer": f"a{i}"},
                    }
                ],
            }
            f.write(json.dumps(case) + "\n")
    here = Path(__file__).resolve().parent
    (folder / "reports_plugin.py").write_text((here / "reports_plugin.py").read_text())
    (folder / "suite.yaml").write_text(
        "name: grid\ncases: cases.jsonl\nplugins: [reports_plugin]\n"
        "systems:\n"
        "  - name: sys\n"
        "    callable: reports_plugin:answer_system\n"
        "    params: {skill: [0.5, 0.9], style: [a, crash]}\n"
        "scorers: [test_exec_match, test_judge]\n"
        "gates: ['pass_rate >= 0.6']\n"
        "reports: [html, excel, junit, markdown, json]\n"
    )
    return folder / "suite.yaml"
