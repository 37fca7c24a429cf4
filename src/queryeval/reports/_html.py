"""The HTML report: one self-contained file (inline CSS, JS and SVG; no network).

Summary figures, charts and breakdowns are rendered in Python (a jinja2 template). The case
table is rendered in the browser from the case data embedded as JSON (gzip+base64 above a
size limit), one page of rows at a time, so a 100,000-case run stays light to open.
"""

from __future__ import annotations

import base64
import gzip
import heapq
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from queryeval import __version__
from queryeval.cases import Case, Score
from queryeval.errors import InputError
from queryeval.reports import _casedata as cd
from queryeval.reports._breakdown import tag_key
from queryeval.reports._components import Family, component_families
from queryeval.reports._flag import flag_note
from queryeval.reports._html_breakdown import benchmark_breakdowns
from queryeval.reports._svg import Series, colour, grouped_hbars, histogram
from queryeval.stats import MAX_BOOTSTRAP_N

if TYPE_CHECKING:
    from jinja2 import Template
    from markupsafe import Markup

    from queryeval.scorers import Scorer

_PLACEHOLDER = "\x00QE-DATA\x00"
_MAX_SERIES = 12  # systems drawn in one chart; tables always list all
_MAX_CATEGORIES = 40
_EDGES = [i / 10 for i in range(11)]


class HtmlOptions(BaseModel):
    """Options of the `html` report (suite `reports: [{kind: html, options: {...}}]`)."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = None
    max_field_chars: int = Field(default=4000, ge=0, description="0: never cut a field")
    compress: Literal["auto", "always", "never"] = "auto"
    compress_above_mb: float = Field(default=4.0, ge=0)
    top_n: int = Field(default=10, ge=0, description="rows in the slowest/costliest tables")
    flip_limit: int = Field(default=200, ge=0, description="flipped case ids listed per pair")


# --- formatting filters ---------------------------------------------------------------------


def _num(v: Any, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _ci(ci: Any) -> str:
    if not ci or ci.get("low") is None:
        return ""
    return f"[{ci['low']:.3f}, {ci['high']:.3f}]"


def _signed(v: Any) -> str:
    return "—" if v is None else f"{v:+.3f}"


def _pval(v: Any) -> str:
    if v is None:
        return ""
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def _money(v: Any) -> str:
    return "—" if v is None else f"{v:.4f}"


def _cell(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def _breakable(v: Any) -> Markup:
    """The text escaped, with a line-break opportunity after each `_ . - / :` inside it: a
    long scorer name wraps at its parts in a narrow card, not mid-word.

    >>> str(_breakable("exec_match<b>"))
    'exec_<wbr>match&lt;b&gt;'
    """
    from markupsafe import Markup, escape

    return Markup(_PARTS.sub(r"\1<wbr>", str(escape(v))))


_PARTS = re.compile(r"([_./:-])(?=\w)")


@cache
def _template() -> Template:
    from jinja2 import Environment

    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(
        num=_num, ci=_ci, signed=_signed, pval=_pval, money=_money, cell=_cell, breakable=_breakable
    )
    return env.from_string(_asset("report.html"))


def _asset(name: str) -> str:
    return (files("queryeval.reports") / "html" / name).read_text(encoding="utf-8")


# --- the embedded case data -------------------------------------------------------------------


class _CaseData:
    """One pass over the records: the table rows plus what the charts need."""

    def __init__(
        self,
        cases: Sequence[Case],
        records: Sequence[Mapping[str, Any]],
        systems: list[str],
        labels: list[str],
        scorers: Mapping[str, Scorer],
        limit: int,
    ) -> None:
        self.systems = systems
        self.labels = labels
        self.tags: list[str] = []
        tag_index: dict[str, int] = {}
        case_index: dict[str, int] = {}
        self.cases: list[list[Any]] = []
        for c in cases:
            case_index[c.id] = len(self.cases)
            tags = [tag_index.setdefault(t, len(tag_index)) for t in c.tags]
            self.cases.append(
                [c.id, c.name, cd.cap(c.question, limit), cd.cap(cd.gold_text(c), limit), tags]
            )
        self.tags = list(tag_index)
        sys_index = {s: i for i, s in enumerate(systems)}
        # ok values per (scorer, system), for the histograms
        self.values: list[list[list[float]]] = [[[] for _ in systems] for _ in labels]
        self.rows: list[list[Any]] = []
        # one flat loop with local names: this runs 100,000 times for a big run
        cap, execution_of, reasoning_of = cd.cap, cd.execution_of, cd.reasoning_of
        latency_of, prediction_text = cd.latency_of, cd.prediction_text
        note_of, rows, hist = self._note, self.rows, self.values
        for rec in records:
            ci = case_index.get(rec["case_id"])
            si = sys_index.get(rec["system"])
            if ci is None or si is None:
                continue
            scores = rec.get("scores") or {}
            values: list[Any] = []
            verdicts: list[str] = []
            notes: list[str] = []
            for j, label in enumerate(labels):
                sd = scores.get(label)
                if sd is None:
                    values.append(None)
                    verdicts.append("-")
                    notes.append("")
                    continue
                v = sd.get("value")
                status = sd.get("status", "ok")
                if v is not None and status == "ok":
                    values.append(v)
                    hist[j][si].append(v)
                else:
                    values.append(status)
                p = sd.get("passed")
                mark = "P" if p is True else "F" if p is False else "-"
                # lower case: the verdict of a human review (an override), shown as such
                verdicts.append(mark.lower() if cd.review_of(sd) else mark)
                scorer = scorers.get(label)
                notes.append(
                    cap(note_of(sd, scorer), limit) if scorer or sd.get("explanation") else ""
                )
            passed = rec.get("passed")
            kind, message = execution_of(rec)
            error = rec.get("error")
            rows.append(
                [
                    ci,
                    si,
                    None if passed is None else int(bool(passed)),
                    latency_of(rec),
                    rec.get("cost"),
                    kind,
                    cap(message, limit),
                    cap(prediction_text(rec), limit),
                    cap(str(error), limit) if error else None,
                    values,
                    "".join(verdicts),
                    notes if any(notes) else 0,
                    cap(reasoning_of(rec), limit),
                ]
            )
        self.has = {
            "outcome": any(r[5] for r in rows),
            "reasoning": any(r[12] for r in rows),
            "latency": any(r[3] is not None for r in rows),
            "cost": any(r[4] is not None for r in rows),
        }

    def top(self, column: int, n: int) -> list[list[Any]]:
        """The n rows with the largest value in `column` (latency 3, cost 4)."""
        present = [i for i, r in enumerate(self.rows) if r[column] is not None]
        return [
            self.rows[i] for i in heapq.nlargest(n, present, key=lambda i: self.rows[i][column])
        ]

    @staticmethod
    def _note(sd: Mapping[str, Any], scorer: Scorer | None) -> str:
        lines = [str(sd["explanation"])] if sd.get("explanation") else []
        if scorer is not None:
            try:
                extra = scorer.report_columns(Score.model_construct(**sd))
            except Exception:  # a report must not die on one odd stored score
                extra = {}
            for col, v in extra.items():
                if v is None:
                    continue
                text = f"{v:.4f}" if isinstance(v, float) else str(v)
                lines.append(f"{col}:\n{text}" if "\n" in text else f"{col}: {text}")
        return "\n".join(lines)

    def payload(self) -> bytes:
        """The compact JSON the page's script reads."""
        data = {
            "systems": self.systems,
            "labels": self.labels,
            "tags": self.tags,
            "cases": self.cases,
            "rows": self.rows,
            "has": self.has,
        }
        return orjson.dumps(data)


def _data_script(raw: bytes, opts: HtmlOptions) -> bytes:
    compress = opts.compress == "always" or (
        opts.compress == "auto" and len(raw) > opts.compress_above_mb * 1e6
    )
    if compress:
        # level 1: several times faster than the default for ~20% more bytes
        packed = base64.b64encode(gzip.compress(raw, compresslevel=1, mtime=0))
        return (
            b'<script id="qe-data" type="application/octet-stream" '
            b'data-encoding="gzip+base64">' + packed + b"</script>"
        )
    # "<" only occurs inside JSON strings, where \u003c is the same character: no `</script>`
    return (
        b'<script id="qe-data" type="application/json">'
        + raw.replace(b"<", b"\\u003c")
        + b"</script>"
    )


# --- sections ---------------------------------------------------------------------------------


def _series_systems(systems: list[str]) -> tuple[list[str], str]:
    if len(systems) <= _MAX_SERIES:
        return systems, ""
    return systems[:_MAX_SERIES], f"(first {_MAX_SERIES} of {len(systems)} systems drawn)"


def _headline(summary: Mapping[str, Any], systems: list[str], labels: list[str]) -> list[dict]:
    out = []
    for i, name in enumerate(systems):
        e = summary["systems"].get(name, {})
        scorers = e.get("scorers", {})
        out.append(
            {
                "name": name,
                "colour": colour(i),
                "pass_rate": e.get("pass_rate"),
                "pass_ci": e.get("pass_rate_ci95"),
                "passed": e.get("passed", 0),
                "failed": e.get("failed", 0),
                "no_verdict": e.get("no_verdict", 0),
                "flagged": bool(e.get("flagged")),
                "no_verdict_share": e.get("no_verdict_share") or 0.0,
                "system_errors": e.get("system_errors", 0),
                "latency": e.get("latency_s"),
                "cost": e.get("system_cost"),
                "scorers": [
                    {
                        "label": label,
                        "mean": scorers.get(label, {}).get("mean"),
                        "ci": scorers.get(label, {}).get("ci95"),
                        "ok": scorers.get(label, {}).get("ok", 0),
                        "n": scorers.get(label, {}).get("n", 0),
                        "unscored": scorers.get(label, {}).get("unscored", 0),
                        "error": scorers.get(label, {}).get("error", 0),
                        **_failure_view(scorers.get(label, {})),
                    }
                    for label in labels
                ],
            }
        )
    return out


def _failure_view(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What a report shows of a scorer's failures and unscored share."""
    from queryeval.cases import describe_failures

    return {
        "failed": entry.get("failed_outputs", 0),
        "failures": describe_failures(entry.get("failures") or {}),
        "flagged": bool(entry.get("flagged")),
        "unscored_share": entry.get("unscored_share") or 0.0,
        "flag_note": flag_note(entry),
    }


def _scorer(entry: Mapping[str, Any], label: str) -> Mapping[str, Any]:
    return entry.get("scorers", {}).get(label, {})


def _overview_chart(summary: Mapping[str, Any], systems: list[str], labels: list[str]) -> str:
    drawn, _ = _series_systems(systems)
    categories = ["pass rate", *labels]
    series = []
    for i, name in enumerate(drawn):
        e = summary["systems"].get(name, {})
        entries = [
            (e.get("pass_rate"), e.get("pass_rate_ci95")),
            *(
                (
                    e.get("scorers", {}).get(lb, {}).get("mean"),
                    e.get("scorers", {}).get(lb, {}).get("ci95"),
                )
                for lb in labels
            ),
        ]
        series.append(
            Series(
                name,
                [v for v, _ in entries],
                colour(i),
                [ci["low"] if ci else None for _, ci in entries],
                [ci["high"] if ci else None for _, ci in entries],
            )
        )
    return grouped_hbars(categories, series, label="means with 95% confidence intervals")


def _scorer_sections(
    summary: Mapping[str, Any], data: _CaseData, systems: list[str], labels: list[str]
) -> list[dict]:
    drawn, _ = _series_systems(systems)
    out = []
    for label in labels:
        entries = {s: _scorer(summary["systems"].get(s, {}), label) for s in systems}
        first: Mapping[str, Any] = next((e for e in entries.values() if e.get("scorer")), {})
        desc = first.get("scorer", {})
        series = []
        for i, s in enumerate(drawn):
            vals = np.clip(np.asarray(data.values[labels.index(label)][i], dtype=float), 0, 1)
            counts, _ = np.histogram(vals, bins=_EDGES)
            series.append(Series(s, [float(c) for c in counts], colour(i)))
        metric_names: list[str] = []
        for e in entries.values():
            for name in e.get("metrics", {}):
                if name not in metric_names:
                    metric_names.append(name)
        metrics = [
            {
                "name": name,
                # a system with no result yet (a partial run) has an empty cell
                "cells": [
                    entries[s].get("metrics", {}).get(name) or {"mean": None} for s in systems
                ],
            }
            for name in metric_names
        ]
        reasons = [
            {"system": s, "reason": reason, "count": count}
            for s, e in entries.items()
            for reason, count in (e.get("not_scored_reasons") or {}).items()
        ]
        options = desc.get("options")
        out.append(
            {
                "tables": _report_tables(desc.get("name"), entries),
                "label": label,
                "name": desc.get("name", ""),
                "threshold": desc.get("threshold"),
                "options": orjson.dumps(options).decode() if options else "",
                "histogram": histogram(_EDGES, series, label=f"{label} score histogram"),
                "status": [
                    {
                        "system": s,
                        "ok": e.get("ok", 0),
                        "unscored": e.get("unscored", 0),
                        "error": e.get("error", 0),
                        **_failure_view(e),
                    }
                    for s, e in entries.items()
                ],
                "metrics": metrics,
                "reasons": reasons,
            }
        )
    return out


def _report_tables(name: Any, entries: Mapping[str, Mapping[str, Any]]) -> list[dict]:
    """The tables a scorer builds from each system's dataset figures (`report_tables`, as
    the console shows them), for its section."""
    from queryeval.scorers import scorer_class

    if not name:
        return []
    try:
        cls = scorer_class(str(name))
    except KeyError:
        return []
    out = []
    for system, e in entries.items():
        if not e.get("aggregate"):
            continue
        try:
            tables = cls.report_tables(e["aggregate"])
        except Exception:  # a report must not die on one odd stored aggregate
            continue
        out += [{"system": system, "title": title, "header": rows[0], "rows": rows[1:]}
                for title, rows in tables if len(rows) >= 2]  # fmt: skip
    return out


def _tags(summary: Mapping[str, Any], systems: list[str], labels: list[str]) -> dict | None:
    by_tag = {s: summary["systems"].get(s, {}).get("by_tag") or {} for s in systems}
    all_tags: dict[str, int] = {}
    for tags in by_tag.values():
        for tag, t in tags.items():
            all_tags[tag] = max(all_tags.get(tag, 0), t.get("cases", 0))
    if not all_tags:
        return None
    rows = [
        {
            "tag": tag,
            "system": s,
            "cases": t.get("cases"),
            "pass_rate": t.get("pass_rate"),
            "means": [t.get("means", {}).get(lb) for lb in labels],
        }
        for tag in sorted(all_tags, key=tag_key)
        for s in systems
        if (t := by_tag[s].get(tag)) is not None
    ]
    drawn, note = _series_systems(systems)
    top = sorted(all_tags, key=lambda t: (-all_tags[t], t))[:_MAX_CATEGORIES]
    if len(all_tags) > len(top):
        note = f"(the {len(top)} largest of {len(all_tags)} tags) {note}".strip()
    series = [
        Series(s, [(by_tag[s].get(t) or {}).get("pass_rate") for t in top], colour(i))
        for i, s in enumerate(drawn)
    ]
    chart = grouped_hbars(top, series, label="pass rate per tag")
    return {"rows": rows, "chart": chart, "chart_note": note}


def _family_series(
    fam: Family, system: str, items: list[str], column: str, systems: list[str]
) -> Series:
    values = [fam.data[system].get(it, {}).get(column) for it in items]
    return Series(system, values, colour(systems.index(system)))


def _component(fam: Family, systems: list[str]) -> dict:
    present = [s for s in systems if s in fam.data]
    drawn, note = _series_systems(present)
    multi = len(present) > 1
    chart = ""
    if fam.kind == "table":
        header = ["item", *(["system"] if multi else []), *fam.columns]
        rows = [
            [item, *([s] if multi else []), *(fam.data[s][item].get(c) for c in fam.columns)]
            for item in fam.items
            for s in present
            if item in fam.data[s]
        ]
        col, is_rate = fam.main_column()
        if col is not None:
            items = fam.items[:_MAX_CATEGORIES]
            series = [
                Series(
                    s, [fam.data[s].get(it, {}).get(col) for it in items], colour(systems.index(s))
                )
                for s in drawn
            ]
            chart = grouped_hbars(items, series, domain=(0.0, 1.0) if is_rate else None, label=col)
            note = f"(chart: {col}) {note}".strip()
    else:
        header = ["name", *present]
        rows = [
            [item, *(fam.data[s].get(item, {}).get("value") for s in present)] for item in fam.items
        ]
        rates = fam.rate_items()
        every = [v for r in rows for v in r[1:] if v is not None]
        if rates:
            items, domain = rates[:_MAX_CATEGORIES], (0.0, 1.0)
        elif every and all(isinstance(v, int) and v >= 0 for v in every):
            items, domain = fam.items[:_MAX_CATEGORIES], None  # counts, e.g. error types
        else:
            items = []
        if items:
            series = [
                Series(
                    s,
                    [fam.data[s].get(it, {}).get("value") for it in items],
                    colour(systems.index(s)),
                )
                for s in drawn
            ]
            fmt = (lambda v: f"{v:.2f}") if domain else (lambda v: f"{v:g}")
            chart = grouped_hbars(items, series, domain=domain, fmt=fmt, label=fam.title)
    return {"title": fam.title, "header": header, "rows": rows, "chart": chart, "chart_note": note}


def _outliers(data: _CaseData, which: str, n: int) -> list[dict]:
    out = []
    for row in data.top(3 if which == "latency" else 4, n):
        out.append(
            {
                "case_id": data.cases[row[0]][0],
                "system": data.systems[row[1]],
                "latency": row[3],
                "cost": row[4],
                "verdict": "error" if row[8] else {1: "pass", 0: "fail"}.get(row[2], "—"),
            }
        )
    return out


def _comparison(comparison: Mapping[str, Any] | None) -> dict | None:
    if not comparison:
        return None
    out = dict(comparison)
    pairs = []
    for pair in comparison.get("systems", []):
        metrics = [m for m in pair.get("metrics", []) if m.get("diff") is not None]
        shown = metrics[:_MAX_CATEGORIES]
        bound = max(
            [
                abs(x)
                for m in shown
                for x in (m["diff"], *((m["ci"] or {}).get(k, 0) for k in ("low", "high")))
            ]
            or [1.0]
        )
        bound = max(bound * 1.1, 0.01)
        series = [
            Series(
                "B − A",
                [m["diff"] for m in shown],
                colour(0),
                [(m["ci"] or {}).get("low") for m in shown],
                [(m["ci"] or {}).get("high") for m in shown],
            )
        ]
        chart = grouped_hbars(
            [m["metric"] for m in shown],
            series,
            domain=(-bound, bound),
            fmt=lambda v: f"{v:+.3f}",
            label="differences with confidence intervals",
        )
        pairs.append({**pair, "chart": chart})
    out["systems"] = pairs
    return out


_RUN_KEYS = (
    "suite_file",
    "status",
    "started_at",
    "finished_at",
    "config_hash",
    "inputs_hash",
    "seed",
    "baseline",
)


def _run_info(summary: Mapping[str, Any], info: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = [("suite", str(summary.get("suite")))]
    if info:
        for key in _RUN_KEYS:
            if info.get(key) is not None:
                items.append((key.replace("_", " "), str(info[key])))
        versions = info.get("versions") or {}
        if versions:
            items.append(("versions", ", ".join(f"{k} {v}" for k, v in versions.items())))
    return items


def _partial(info: Mapping[str, Any] | None) -> str | None:
    """The page's warning when the run had not completed (`queryeval report --partial`, or
    a run stopped before the end); None for a complete run.

    >>> _partial({"status": "running"}).startswith("Partial")
    True
    """
    status = (info or {}).get("status")
    if status in (None, "complete"):
        return None
    return (
        f"Partial results: the run had not completed when this report was written (status "
        f"{status!r}); the figures cover only the cases stored by then."
    )


def _review(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> dict | None:
    """The human review section: the file, judge-human agreement per scorer, and every
    override (system, case, scorer, in words); None when the run had no review."""
    section = summary.get("review")
    if not section:
        return None
    overrides = []
    for rec in records:
        for label, sd in (rec.get("scores") or {}).items():
            review = cd.review_of(sd)
            if review is not None:
                overrides.append(
                    {
                        "system": rec["system"],
                        "case": rec["case_id"],
                        "scorer": label,
                        "text": cd.review_text(review),
                    }
                )
    agreement = [{"scorer": k, **v} for k, v in (section.get("agreement") or {}).items()]
    return {"file": section.get("file"), "agreement": agreement, "overrides": overrides,
            "gold_corrections": section.get("gold_corrections", 0)}  # fmt: skip


def _overlays(overlays: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The correction overlays section (overlay-<name>.json's contents): per overlay, per
    system, the pass rate and each scorer's mean on the original golds and the overlay's,
    side by side, then the cases it changes with each system's verdict before and after."""
    out = []
    for content in overlays:
        systems = content.get("systems") or {}
        labels = sorted({k for f in systems.values() for k in f["original"].get("means") or {}})
        rows = []
        for system, figs in systems.items():
            a, b = figs["original"], figs["overlay"]
            pairs = [(a.get("pass_rate"), b.get("pass_rate"))]
            pairs += [
                ((a.get("means") or {}).get(k), (b.get("means") or {}).get(k)) for k in labels
            ]
            rows.append({"system": system, "pairs": pairs})
        changed = [
            {
                **ch,
                "verdicts": ", ".join(
                    f"{s}: {_cell(v.get('original'))} → {_cell(v.get('overlay'))}"
                    for s, v in (ch.get("systems") or {}).items()
                ),
            }
            for ch in content.get("changed") or []
        ]
        out.append({**content, "labels": labels, "rows": rows, "changed": changed})
    return out


# --- entry point --------------------------------------------------------------------------------


def write_html(
    path: Path,
    summary: Mapping[str, Any],
    cases: Sequence[Case],
    records: Sequence[Mapping[str, Any]],
    scorers: Mapping[str, Scorer],
    *,
    options: Mapping[str, Any] | None = None,
    run_info: Mapping[str, Any] | None = None,
    comparison: Mapping[str, Any] | None = None,
    overlays: Sequence[Mapping[str, Any]] = (),
) -> Path:
    """Write the self-contained HTML report of one run (with a section per correction
    overlay, `overlays`: overlay-<name>.json's contents); returns its path."""
    try:
        opts = HtmlOptions.model_validate(dict(options or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(first["msg"], where=f"reports.html.options.{where}") from None
    systems = list(summary.get("systems", {}))
    for rec in records:
        if rec["system"] not in systems:
            systems.append(rec["system"])
    labels = list(scorers) or list(
        dict.fromkeys(
            lb for e in summary.get("systems", {}).values() for lb in e.get("scorers", {})
        )
    )
    data = _CaseData(cases, records, systems, labels, scorers, opts.max_field_chars)
    full_summary = {"systems": {}, **summary}
    full_summary["systems"] = {s: summary.get("systems", {}).get(s, {}) for s in systems}
    when = (run_info or {}).get("finished_at") or datetime.now(UTC).isoformat(timespec="seconds")
    context = {
        "title": opts.title or f"queryeval — {summary.get('suite', 'run')}",
        "version": __version__,
        "generated_at": when,
        "n_cases": summary.get("n_cases", len(cases)),
        "systems": systems,
        "system_names": systems,
        "scorer_labels": labels,
        "headline": _headline(full_summary, systems, labels),
        "overview_chart": _overview_chart(full_summary, systems, labels),
        "normal_above": MAX_BOOTSTRAP_N,
        "gates": summary.get("gates") or [],
        "comparison": _comparison(comparison),
        "review": _review(summary, records),
        "overlays": _overlays(overlays),
        "flip_limit": opts.flip_limit,
        "scorer_sections": _scorer_sections(full_summary, data, systems, labels),
        "breakdowns": benchmark_breakdowns(full_summary, systems, labels, _MAX_SERIES),
        "tags": _tags(full_summary, systems, labels),
        "components": [_component(f, systems) for f in component_families(full_summary)],
        "slowest": _outliers(data, "latency", opts.top_n),
        "costliest": _outliers(data, "cost", opts.top_n),
        "run_info": _run_info(summary, run_info),
        "partial": _partial(run_info),
        "css": _asset("report.css"),
        "js": _asset("report.js"),
        "data_script": _PLACEHOLDER,
    }
    from markupsafe import Markup

    for key in ("css", "js"):
        context[key] = Markup(context[key])
    page = _template().render(**context)
    head, tail = page.split(_PLACEHOLDER)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.write(head.encode())
        f.write(_data_script(data.payload(), opts))
        f.write(tail.encode())
    return path


def summary_sections(
    summary: Mapping[str, Any], run_info: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What the HTML report shows of a run from its summary alone (no case data): headline
    figures, the overview chart, gates, tags, benchmark breakdowns, components, run info
    and the partial-run warning (`queryeval view`'s run page; charts are SVG text).

    >>> summary_sections({"suite": "s", "systems": {"a": {"pass_rate": 0.5}}})["systems"]
    ['a']
    """
    systems = list(summary.get("systems", {}))
    labels = list(
        dict.fromkeys(
            lb for e in summary.get("systems", {}).values() for lb in e.get("scorers", {})
        )
    )
    full = {"systems": {}, **summary}
    return {
        "systems": systems,
        "labels": labels,
        "headline": _headline(full, systems, labels),
        "overview_chart": _overview_chart(full, systems, labels),
        "gates": summary.get("gates") or [],
        "tags": _tags(full, systems, labels),
        "breakdowns": benchmark_breakdowns(full, systems, labels, _MAX_SERIES),
        "components": [_component(f, systems) for f in component_families(full)],
        "run_info": _run_info(summary, run_info),
        "partial": _partial(run_info),
    }
