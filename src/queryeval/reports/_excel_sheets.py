"""The workbook's sheets beyond seed 001: per-scorer details, judge verdicts, aggregate
components, gates and the comparison of grid configurations (`name[a=1,b=2]`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from queryeval.cases import Case, Score
from queryeval.reports._casedata import is_judge_score, review_of, review_text
from queryeval.reports._components import component_families, scorer_labels
from queryeval.reports._xlsx import MAX_CELL, Table

if TYPE_CHECKING:
    from queryeval.scorers import Scorer

_NUM = "0.000"
_VERDICT = {True: "PASS", False: "FAIL", None: "—"}
_GRID = re.compile(r"^(?P<name>[^[]*)\[(?P<params>.*)\]$")
_PARAM_SPLIT = re.compile(r",(?=[A-Za-z_][\w.\-]*=)")


def _json(value: Any) -> str:
    text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return text if len(text) <= MAX_CELL else text[:MAX_CELL] + "…"


def _flatten(details: Mapping[str, Any], skip_text: set[str]) -> dict[str, Any]:
    """Scalar details as columns (one level of nesting as `key.sub`), the rest as JSON."""
    out: dict[str, Any] = {}
    for key, v in details.items():
        if key in ("metrics", "reasoning", "review"):
            continue
        if isinstance(v, str):
            if v not in skip_text:
                out[key] = v
        elif v is None or isinstance(v, int | float | bool):
            out[key] = v
        elif isinstance(v, Mapping) and all(
            x is None or isinstance(x, str | int | float | bool) for x in v.values()
        ):
            for sub, x in v.items():
                out[f"{key}.{sub}"] = x
        else:
            out[key] = _json(v)
    return out


class ReportColumns:
    """Each stored score's `scorer.report_columns`, computed once: the Overview and the
    scorer's own sheet both show them (on SDMX runs they are half the time of building the
    workbook). A score whose columns cannot be computed shows none: a report must not die on
    one odd stored score. `last=True` hands the columns over and forgets them."""

    def __init__(self) -> None:
        self._memo: dict[tuple[int, str], dict[str, Any]] = {}

    def __call__(
        self, label: str, scorer: Scorer, sd: Mapping[str, Any], *, last: bool = False
    ) -> dict[str, Any]:
        key = (id(sd), label)
        got = self._memo.pop(key, None) if last else self._memo.get(key)
        if got is None:
            try:
                got = scorer.report_columns(Score.model_construct(**sd))
            except Exception:
                got = {}
            if not last:
                self._memo[key] = got
        return got


def _in_unit(values: list[Any]) -> bool:
    nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return bool(nums) and all(0 <= v <= 1 for v in nums)


def scorer_table(
    label: str,
    scorer: Scorer,
    records: Sequence[Mapping[str, Any]],
    columns_of: ReportColumns | None = None,
) -> Table:
    """One row per (system, case) with the scorer's value, verdict, sub-metrics, report
    columns, its other details and its explanation."""
    columns_of = columns_of or ReportColumns()
    rows: list[dict[str, Any]] = []
    metric_cols: list[str] = []
    extra_cols: list[str] = []
    detail_cols: list[str] = []
    reviewed = False
    for rec in records:
        sd = (rec.get("scores") or {}).get(label)
        if sd is None:
            continue
        details = sd.get("details") or {}
        review = review_of(sd)
        row: dict[str, Any] = {
            "system": rec["system"],
            "case id": rec["case_id"],
            "status": sd.get("status", "ok"),
            "value": sd.get("value"),
            "passed": _VERDICT[sd.get("passed")],
            "human review": review_text(review) if review is not None else None,
        }
        reviewed = reviewed or review is not None
        for name, v in (details.get("metrics") or {}).items():
            row[name] = v
            if name not in metric_cols:
                metric_cols.append(name)
        extra = columns_of(label, scorer, sd, last=True)
        for col, v in extra.items():
            key = f"report: {col}"
            row[key] = v
            if key not in extra_cols:
                extra_cols.append(key)
        texts = {v for v in extra.values() if isinstance(v, str)}
        for key, v in _flatten(details, texts).items():
            col = f"details: {key}"
            row[col] = v
            if col not in detail_cols:
                detail_cols.append(col)
        row["explanation"] = sd.get("explanation") or None
        rows.append(row)
    columns = ["system", "case id", "status", "value", "passed"]
    columns += ["human review"] if reviewed else []  # an override is shown as one
    columns += [*metric_cols, *extra_cols, *detail_cols, "explanation"]
    table_rows = [[r.get(c) for c in columns] for r in rows]
    numeric = ["value", *metric_cols, *extra_cols, *detail_cols]
    scales = [
        c
        for c in ["value", *metric_cols, *extra_cols]
        if _in_unit([r[columns.index(c)] for r in table_rows])
    ]
    return Table(
        columns=columns,
        rows=table_rows,
        number_formats=dict.fromkeys(numeric, _NUM),
        scales=scales,
        verdicts=["passed"],
        freeze="C2",
    )


def judge_table(cases: Mapping[str, Case], records: Sequence[Mapping[str, Any]]) -> Table | None:
    """Every judge verdict with its reasoning; None when no scorer is a judge."""
    columns = [
        "system",
        "case id",
        "question",
        "scorer",
        "verdict",
        "passed",
        "status",
        "reasoning",
        "explanation",
        "cached",
        "cost",
    ]
    rows = []
    for rec in records:
        for label, sd in (rec.get("scores") or {}).items():
            if not is_judge_score(sd):
                continue
            details = sd.get("details") or {}
            case = cases.get(rec["case_id"])
            rows.append(
                [
                    rec["system"],
                    rec["case_id"],
                    case.question if case is not None else None,
                    label,
                    sd.get("value"),
                    _VERDICT[sd.get("passed")],
                    sd.get("status", "ok"),
                    details.get("reasoning"),
                    sd.get("explanation") or None,
                    details.get("cached"),
                    details.get("cost"),
                ]
            )
    if not rows:
        return None
    return Table(
        columns=columns,
        rows=rows,
        number_formats={"verdict": _NUM, "cost": "0.000000"},
        scales=["verdict"],
        verdicts=["passed"],
        freeze="C2",
    )


def components_table(summary: Mapping[str, Any]) -> Table | None:
    """Every number of the scorers' aggregates (per dimension, per family, error types) in
    long form, ready for a pivot table; None when there are none."""
    rows = []
    for fam in component_families(summary):
        for system, by_item in fam.data.items():
            for item, values in by_item.items():
                for metric, v in values.items():
                    rows.append([system, fam.scorer, fam.path or "aggregate", item, metric, v])
    if not rows:
        return None
    return Table(
        columns=["system", "scorer", "family", "item", "metric", "value"],
        rows=rows,
        number_formats={"value": _NUM},
        freeze="A2",
    )


def review_table(records: Sequence[Mapping[str, Any]]) -> Table | None:
    """Every verdict a human review overrode: the machine's verdict and value beside the
    reviewer's, with the note; None when nothing was overridden."""
    rows = []
    for rec in records:
        for label, sd in (rec.get("scores") or {}).items():
            review = review_of(sd)
            if review is None:
                continue
            original = review.get("original") or {}
            rows.append(
                [
                    rec["system"],
                    rec["case_id"],
                    label,
                    original.get("status"),
                    original.get("value"),
                    _VERDICT.get(original.get("passed"), "—"),
                    _VERDICT[review.get("verdict") == "pass"],
                    review.get("reviewer") or None,
                    review.get("note") or None,
                ]
            )
    if not rows:
        return None
    columns = ["system", "case id", "scorer", "machine status", "machine value",
               "machine verdict", "human verdict", "reviewer", "note"]  # fmt: skip
    return Table(
        columns=columns,
        rows=rows,
        number_formats={"machine value": _NUM},
        verdicts=["machine verdict", "human verdict"],
        freeze="C2",
    )


def gates_table(summary: Mapping[str, Any]) -> Table | None:
    """The gates with their values (and baseline bounds); None when the suite has none."""
    gates = summary.get("gates") or []
    if not gates:
        return None
    rows = [
        [
            g["gate"],
            g["system"],
            g.get("value"),
            g.get("bound"),
            g.get("baseline_value"),
            _VERDICT[g["passed"]],
            g.get("note"),
        ]
        for g in gates
    ]
    return Table(
        columns=["gate", "system", "value", "bound", "baseline value", "result", "note"],
        rows=rows,
        number_formats=dict.fromkeys(["value", "bound", "baseline value"], _NUM),
        verdicts=["result"],
    )


def _param_value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def parse_configuration(name: str) -> tuple[str, dict[str, Any]] | None:
    """`rag[top_k=3,model=x]` -> ("rag", {"top_k": 3, "model": "x"}); None for a plain name."""
    m = _GRID.match(name)
    if not m:
        return None
    params: dict[str, Any] = {}
    for part in _PARAM_SPLIT.split(m.group("params")):
        key, sep, value = part.partition("=")
        if not sep:
            return None
        params[key.strip()] = _param_value(value.strip())
    return m.group("name"), params


def configurations_table(summary: Mapping[str, Any]) -> Table | None:
    """Grid runs: one row per configuration, its parameters as columns beside its pass rate,
    scorer means and CIs, latency and cost; None when no system is a grid point."""
    systems = summary.get("systems", {})
    parsed = {name: parse_configuration(name) for name in systems}
    if not any(parsed.values()):
        return None
    param_cols: list[str] = []
    for p in parsed.values():
        for key in p[1] if p else {}:
            if key not in param_cols:
                param_cols.append(key)
    labels = scorer_labels(summary)
    columns = ["configuration", "system", *param_cols, "cases", "pass rate", "pass CI low"]
    columns += ["pass CI high"]
    for label in labels:
        columns += [label, f"{label} CI low", f"{label} CI high"]
    columns += ["system errors", "latency p50 (s)", "latency p95 (s)", "cost", "rank"]
    ranked = sorted(systems, key=lambda s: -(systems[s].get("pass_rate") or -1.0))
    rows = []
    for name, e in systems.items():
        base, params = parsed[name] or (name, {})
        ci = e.get("pass_rate_ci95") or {}
        row = [name, base, *(params.get(k) for k in param_cols)]
        row += [e.get("cases"), e.get("pass_rate"), ci.get("low"), ci.get("high")]
        for label in labels:
            s = e.get("scorers", {}).get(label, {})
            sci = s.get("ci95") or {}
            row += [s.get("mean"), sci.get("low"), sci.get("high")]
        latency = e.get("latency_s") or {}
        row += [e.get("system_errors"), latency.get("p50"), latency.get("p95")]
        row += [e.get("system_cost"), ranked.index(name) + 1]
        rows.append(row)
    rated = ["pass rate", "pass CI low", "pass CI high"]
    for label in labels:
        rated += [label, f"{label} CI low", f"{label} CI high"]
    return Table(
        columns=columns,
        rows=rows,
        number_formats={
            **dict.fromkeys(rated, _NUM),
            "latency p50 (s)": "0.00",
            "latency p95 (s)": "0.00",
            "cost": "0.0000",
        },
        scales=["pass rate", *labels],
        freeze="B2",
    )
