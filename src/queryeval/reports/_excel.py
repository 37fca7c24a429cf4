"""The Excel workbook: seed 001's Overview and Statistics sheets, generalised to any scorer,
then one sheet per scorer with its details, the judge's verdicts, the components of the
scorers' aggregates, the gates, and a comparison of grid configurations.

Each sheet is built just before it is written, and written by XlsxWriter in constant-memory
mode (`_xlsx`: rows stream to disk), so big runs stay fast and small in memory; numbers stay
numbers with formats, headers are frozen and filtered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case, describe_failures
from queryeval.reports._excel_sheets import (
    ReportColumns,
    components_table,
    configurations_table,
    gates_table,
    judge_table,
    review_table,
    scorer_table,
)
from queryeval.reports._flag import flag_note
from queryeval.reports._xlsx import Sheet, StyledRows, Table, sheet_title, write_workbook

if TYPE_CHECKING:
    from queryeval.scorers import Scorer

_WRAP_WIDTH = 60
_RATE = "0.00"


def _overview(
    cases: Mapping[str, Case],
    records: Sequence[Mapping[str, Any]],
    scorers: Mapping[str, Scorer],
    multi_system: bool,
    columns_of: ReportColumns,
) -> Table:
    """Seed 001's Overview: one row per case (and system), the scorers' own columns."""
    extra_cols: list[str] = []
    rows: list[dict[str, Any]] = []
    for rec in records:
        case = cases.get(rec["case_id"])
        if case is None:
            continue
        row: dict[str, Any] = {
            "id": case.id,
            "name": case.name,
            "question": case.question,
        }
        if multi_system:
            row["system"] = rec["system"]
        row["passed"] = {True: "PASS", False: "FAIL", None: "—"}[rec.get("passed")]
        for label, scorer in scorers.items():
            sd = rec["scores"].get(label)
            if sd is None:
                continue
            status = sd.get("status", "ok")
            row[label] = sd.get("value") if status == "ok" else status
            for col, value in columns_of(label, scorer, sd).items():
                key = col if len(scorers) == 1 else f"{label}: {col}"
                row[key] = value
                if key not in extra_cols:
                    extra_cols.append(key)
        if rec.get("error"):
            row["system error"] = rec["error"]
        rows.append(row)
    base = ["id", "name", "question", *(["system"] if multi_system else []), "passed"]
    columns = [*base, *scorers, *extra_cols]
    if any("system error" in r for r in rows):
        columns.append("system error")
    rated = [c for c in columns if c in scorers or c.endswith(("recall", "precision"))]
    return Table(
        columns=columns,
        rows=[[r.get(c) for c in columns] for r in rows],
        number_formats=dict.fromkeys(rated, _RATE),
        scales=rated,
        verdicts=["passed"],
        freeze="B2",
        max_width=_WRAP_WIDTH,
    )


def _statistics_rows(summary: Mapping[str, Any]) -> list[tuple[list[Any], str]]:
    """Seed 001's Statistics sheet as rows, each with its style: '', 'bold' or 'title'."""
    rows: list[tuple[list[Any], str]] = [
        (["Suite", summary.get("suite")], ""),
        (["Cases", summary.get("n_cases")], ""),
    ]
    for system, entry in summary.get("systems", {}).items():
        rows.append(([], ""))
        rows.append(([f"System: {system}"], "title"))
        rows.append(
            (
                [
                    "pass rate",
                    entry.get("pass_rate"),
                    "passed",
                    entry.get("passed"),
                    "failed",
                    entry.get("failed"),
                    "no verdict",
                    entry.get("no_verdict"),
                ],
                "",
            )
        )
        for label, s in entry.get("scorers", {}).items():
            agg = s.get("aggregate") or {}
            dq = agg.get("data_query_metrics")
            if dq:
                rows.append(([], ""))
                rows.append((["Data Query Metrics"], "first-bold"))
                for key in ("macro_precision", "macro_recall", "micro_precision", "micro_recall"):
                    rows.append(([key.replace("_", " "), dq.get(key)], ""))
                rows.append((["cases", dq.get("cases")], ""))
            rows.append(([], ""))
            header = ["mean", "95% CI low", "95% CI high", "ok", "failed", "unscored", "error",
                      "pass rate", "failures (0 in the mean)", "unscored share"]  # fmt: skip
            rows.append(([f"{label}", *header], "bold"))
            ci = s.get("ci95") or {}
            share = s.get("unscored_share")
            flag = f" (flagged: {flag_note(s)})" if s.get("flagged") else ""
            rows.append(
                (
                    [
                        label,
                        s.get("mean"),
                        ci.get("low"),
                        ci.get("high"),
                        s.get("ok"),
                        s.get("failed_outputs", 0),
                        s.get("unscored"),
                        s.get("error"),
                        s.get("pass_rate"),
                        describe_failures(s.get("failures") or {}),
                        f"{share:.1%}{flag}" if share is not None else "",
                    ],
                    "",
                )
            )
            for metric, m in s.get("metrics", {}).items():
                mci = m.get("ci95") or {}
                rows.append(
                    (
                        [f"  {metric}", m.get("mean"), mci.get("low"), mci.get("high"), m.get("n")],
                        "",
                    )
                )
            per_dim = agg.get("per_dimension")
            if per_dim:
                rows.append(([], ""))
                rows.append(
                    (
                        [
                            "dimension",
                            "cases",
                            "mean precision",
                            "mean recall",
                            "micro precision",
                            "micro recall",
                            "TP",
                            "FP",
                            "FN",
                        ],
                        "bold",
                    )
                )
                for dim, d in per_dim.items():
                    rows.append(
                        (
                            [
                                dim,
                                d["cases"],
                                d["mean_precision"],
                                d["mean_recall"],
                                d["micro_precision"],
                                d["micro_recall"],
                                d["tp"],
                                d["fp"],
                                d["fn"],
                            ],
                            "",
                        )
                    )
        rows.extend(_breakdown_rows(entry))
    return rows


def _breakdown_rows(entry: Mapping[str, Any]) -> list[tuple[list[Any], str]]:
    """Spider hardness / BIRD difficulty / turn tables, when the cases carry those tags."""
    from queryeval.reports._breakdown import breakdowns

    rows: list[tuple[list[Any], str]] = []
    for title, table in breakdowns(entry):
        rows.append(([], ""))
        rows.append(([title], "first-bold"))
        rows.append((table[0], "bold"))
        rows.extend((row, "") for row in table[1:])
    return rows


def _overlay_rows(overlays: Sequence[Mapping[str, Any]]) -> list[tuple[list[Any], str]]:
    """Per correction overlay (overlay-<name>.json's content): each system's pass rate and
    scorer means on the original golds and the overlay's side by side, then the changed
    cases with each system's verdict before and after."""
    rows: list[tuple[list[Any], str]] = []
    for content in overlays:
        o, systems = content["overlay"], content.get("systems") or {}
        labels = sorted({k for f in systems.values() for k in f["original"].get("means") or {}})
        rows.append(([f"overlay {o['name']}", o.get("file"), o.get("sha256")], "first-bold"))
        head = ["system"]
        for x in ["pass rate", *labels]:
            head += [f"{x} (original)", f"{x} (overlay)"]
        rows.append((head, "bold"))
        for system, figs in systems.items():
            a, b = figs["original"], figs["overlay"]
            row: list[Any] = [system, a.get("pass_rate"), b.get("pass_rate")]
            for k in labels:
                row += [(a.get("means") or {}).get(k), (b.get("means") or {}).get(k)]
            rows.append((row, ""))
        rows.append(
            (["case", "change", "reason", "source", "verdicts (original -> overlay)"], "bold")
        )
        for ch in content.get("changed") or []:
            verdicts = ", ".join(
                f"{s}: {v.get('original')} -> {v.get('overlay')}"
                for s, v in (ch.get("systems") or {}).items()
            )
            rows.append(
                (
                    [ch["case_id"], ch.get("action"), ch.get("reason"), ch.get("source"), verdicts],
                    "",
                )
            )
        rows.append(([], ""))
    return rows


def workbook_sheets(
    summary: Mapping[str, Any],
    cases: Sequence[Case],
    records: Sequence[Mapping[str, Any]],
    scorers: Mapping[str, Scorer],
    overlays: Sequence[Mapping[str, Any]] = (),
) -> Iterator[tuple[str, Sheet]]:
    """The workbook's sheets in order, each built when the writer asks for it: `Overview`,
    `Statistics`, a sheet per scorer, then `Review` (a human review's overrides), `Judge`,
    `Components`, `Gates` and `Configurations` when they apply, and `Overlays` (each
    correction overlay's figures beside the original ones) when there are overlays."""
    by_id = {c.id: c for c in cases}
    order = {c.id: i for i, c in enumerate(cases)}
    systems = list(summary.get("systems", {}))
    position = {s: i for i, s in enumerate(systems)}
    ordered = sorted(
        records,
        key=lambda r: (position.get(r["system"], 0), order.get(r["case_id"], 0)),
    )
    columns_of = ReportColumns()
    yield "Overview", _overview(by_id, ordered, scorers, len(systems) > 1, columns_of)
    yield "Statistics", StyledRows(_statistics_rows(summary))
    taken = ["Overview", "Statistics", "Review", "Judge", "Components", "Gates", "Configurations"]
    taken += ["Overlays"] if overlays else []
    for label, scorer in scorers.items():
        title = sheet_title(label, taken)
        taken.append(title)
        yield title, scorer_table(label, scorer, ordered, columns_of)
    optional: list[tuple[str, Callable[[], Table | None]]] = [
        ("Review", lambda: review_table(ordered)),
        ("Judge", lambda: judge_table(by_id, ordered)),
        ("Components", lambda: components_table(summary)),
        ("Gates", lambda: gates_table(summary)),
        ("Configurations", lambda: configurations_table(summary)),
    ]
    for title, build in optional:
        table = build()
        if table is not None:
            yield title, table
    if overlays:
        yield "Overlays", StyledRows(_overlay_rows(overlays))


def write_excel(
    path: Path,
    summary: Mapping[str, Any],
    cases: Sequence[Case],
    records: Sequence[Mapping[str, Any]],
    scorers: Mapping[str, Scorer],
    overlays: Sequence[Mapping[str, Any]] = (),
) -> Path:
    """Write report.xlsx with the sheets of `workbook_sheets`."""
    return write_workbook(path, workbook_sheets(summary, cases, records, scorers, overlays))
