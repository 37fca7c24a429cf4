"""The Excel workbook: seed 001's Overview and Statistics sheets, generalised to any scorer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case, Score

if TYPE_CHECKING:
    from openpyxl.worksheet.worksheet import Worksheet

    from queryeval.scorers import Scorer

_WRAP_WIDTH = 60
_HEADER_FILL = "DDEBF7"


def _style_header(ws: Worksheet, row: int = 1) -> None:
    from openpyxl.styles import Alignment, Font, PatternFill

    for cell in ws[row]:
        cell.font = Font(bold=True)
        cell.fill = PatternFill("solid", fgColor=_HEADER_FILL)
        cell.alignment = Alignment(vertical="top", wrap_text=True)


def _fit_columns(ws: Worksheet, max_width: int = _WRAP_WIDTH) -> None:
    from openpyxl.styles import Alignment
    from openpyxl.utils import get_column_letter

    widths: dict[int, int] = {}
    for row in ws.iter_rows():
        for cell in row:
            if cell.value is None:
                continue
            text = str(cell.value)
            longest = max((len(line) for line in text.split("\n")), default=0)
            widths[cell.column] = max(widths.get(cell.column, 0), longest)
            if "\n" in text or len(text) > max_width:
                cell.alignment = Alignment(wrap_text=True, vertical="top")
            elif cell.row > 1:
                cell.alignment = Alignment(vertical="top")
    for col, width in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = min(max(10, width + 2), max_width)


def _overview(
    ws: Worksheet,
    cases: Mapping[str, Case],
    records: Sequence[Mapping[str, Any]],
    scorers: Mapping[str, Scorer],
    multi_system: bool,
) -> None:
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
            score = Score.model_construct(**sd)
            row[label] = score.value if score.status == "ok" else score.status
            for col, value in scorer.report_columns(score).items():
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
    ws.append(columns)
    for r in rows:
        ws.append([r.get(c) for c in columns])
    _style_header(ws)
    ws.freeze_panes = "B2"
    ws.auto_filter.ref = ws.dimensions
    _fit_columns(ws)
    for idx, col in enumerate(columns, start=1):
        if col in scorers or col.endswith(("recall", "precision")):
            for (cell,) in ws.iter_rows(min_row=2, min_col=idx, max_col=idx):
                if isinstance(cell.value, float):
                    cell.number_format = "0.00"


def _statistics(ws: Worksheet, summary: Mapping[str, Any]) -> None:
    from openpyxl.styles import Font

    bold = Font(bold=True)
    ws.append(["Suite", summary.get("suite")])
    ws.append(["Cases", summary.get("n_cases")])
    for system, entry in summary.get("systems", {}).items():
        ws.append([])
        ws.append([f"System: {system}"])
        ws.cell(ws.max_row, 1).font = Font(bold=True, size=12)
        ws.append(
            [
                "pass rate",
                entry.get("pass_rate"),
                "passed",
                entry.get("passed"),
                "failed",
                entry.get("failed"),
                "no verdict",
                entry.get("no_verdict"),
            ]
        )
        for label, s in entry.get("scorers", {}).items():
            agg = s.get("aggregate") or {}
            dq = agg.get("data_query_metrics")
            if dq:
                ws.append([])
                ws.append(["Data Query Metrics"])
                ws.cell(ws.max_row, 1).font = bold
                for key in ("macro_precision", "macro_recall", "micro_precision", "micro_recall"):
                    ws.append([key.replace("_", " "), dq.get(key)])
                ws.append(["cases", dq.get("cases")])
            ws.append([])
            ws.append(
                [
                    f"{label}",
                    "mean",
                    "95% CI low",
                    "95% CI high",
                    "ok",
                    "unscored",
                    "error",
                    "pass rate",
                ]
            )
            for cell in ws[ws.max_row]:
                cell.font = bold
            ci = s.get("ci95") or {}
            ws.append(
                [
                    label,
                    s.get("mean"),
                    ci.get("low"),
                    ci.get("high"),
                    s.get("ok"),
                    s.get("unscored"),
                    s.get("error"),
                    s.get("pass_rate"),
                ]
            )
            for metric, m in s.get("metrics", {}).items():
                mci = m.get("ci95") or {}
                ws.append(
                    [f"  {metric}", m.get("mean"), mci.get("low"), mci.get("high"), m.get("n")]
                )
            per_dim = agg.get("per_dimension")
            if per_dim:
                ws.append([])
                ws.append(
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
                    ]
                )
                for cell in ws[ws.max_row]:
                    cell.font = bold
                for dim, d in per_dim.items():
                    ws.append(
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
                        ]
                    )
    for row in ws.iter_rows():
        for cell in row:
            if isinstance(cell.value, float):
                cell.number_format = "0.000"
    _fit_columns(ws, max_width=40)


def write_excel(
    path: Path,
    summary: Mapping[str, Any],
    cases: Sequence[Case],
    records: Sequence[Mapping[str, Any]],
    scorers: Mapping[str, Scorer],
) -> Path:
    """Write report.xlsx: `Overview` (one row per case) and `Statistics` (dataset metrics)."""
    from openpyxl import Workbook

    wb = Workbook()
    overview = wb.active
    assert overview is not None
    overview.title = "Overview"
    by_id = {c.id: c for c in cases}
    order = {c.id: i for i, c in enumerate(cases)}
    systems = list(summary.get("systems", {}))
    ordered = sorted(
        records,
        key=lambda r: (
            systems.index(r["system"]) if r["system"] in systems else 0,
            order.get(r["case_id"], 0),
        ),
    )
    _overview(overview, by_id, ordered, scorers, multi_system=len(systems) > 1)
    _statistics(wb.create_sheet("Statistics"), summary)
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    return path
