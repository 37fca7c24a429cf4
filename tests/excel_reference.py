"""The Excel writer as it was before XlsxWriter: openpyxl's write-only mode, cell by cell.

Kept as the reference that tests/test_excel_writer.py compares the XlsxWriter workbook
against (same sheets, values, formats, widths, panes, filters, conditional formats) and that
bench/bench_excel.py times the new writer against. The sheets themselves (`Table`,
`StyledRows`) and the column sizing come from queryeval.reports._xlsx, unchanged by the move;
only the rendering below is the old code.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.formatting.rule import CellIsRule, ColorScaleRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

from queryeval.reports._xlsx import (
    HEADER_FILL,
    Sheet,
    StyledRows,
    Table,
    cell_text,
    styled_widths,
    table_widths,
)


def _write_table(ws: WriteOnlyWorksheet, table: Table) -> None:
    widths = table_widths(table)
    for i, width in enumerate(widths, start=1):
        ws.column_dimensions[get_column_letter(i)].width = width
    if table.rows:
        ws.freeze_panes = table.freeze
    top = Alignment(vertical="top")
    wrap = Alignment(wrap_text=True, vertical="top")
    bold, fill = Font(bold=True), PatternFill("solid", fgColor=HEADER_FILL)
    header = []
    for name in table.columns:
        cell = WriteOnlyCell(ws, name)
        cell.font, cell.fill, cell.alignment = bold, fill, wrap
        header.append(cell)
    ws.append(header)
    formats = [table.number_formats.get(c) for c in table.columns]
    limits = [w - 2 for w in widths]
    for row in table.rows:
        tall = any(isinstance(v, str) and "\n" in v for v in row)
        out: list[Any] = []
        for i, v in enumerate(row):
            if v is None or isinstance(v, bool):
                out.append(v)
            elif isinstance(v, int | float):
                if formats[i] and isinstance(v, float):
                    cell = WriteOnlyCell(ws, v)
                    cell.number_format = formats[i]
                    if tall:
                        cell.alignment = top
                    out.append(cell)
                else:
                    out.append(v)
            else:
                text = cell_text(v if isinstance(v, str) else str(v))
                if "\n" in text or len(text) > limits[i]:
                    cell = WriteOnlyCell(ws, text)
                    cell.alignment = wrap
                    out.append(cell)
                elif tall:
                    cell = WriteOnlyCell(ws, text)
                    cell.alignment = top
                    out.append(cell)
                else:
                    out.append(text)
        ws.append(out)
    last_row = len(table.rows) + 1
    last_col = get_column_letter(max(1, len(table.columns)))
    ws.auto_filter.ref = f"A1:{last_col}{last_row}"
    if not table.rows:
        return
    for name in table.scales:
        letter = get_column_letter(table.columns.index(name) + 1)
        ws.conditional_formatting.add(
            f"{letter}2:{letter}{last_row}",
            ColorScaleRule(
                start_type="num",
                start_value=0,
                start_color="F8696B",
                mid_type="num",
                mid_value=0.5,
                mid_color="FFEB84",
                end_type="num",
                end_value=1,
                end_color="63BE7B",
            ),
        )
    for name in table.verdicts:
        letter = get_column_letter(table.columns.index(name) + 1)
        ref = f"{letter}2:{letter}{last_row}"
        for word, colour in (("PASS", "C6EFCE"), ("FAIL", "FFC7CE")):
            ws.conditional_formatting.add(
                ref,
                CellIsRule(
                    operator="equal",
                    formula=[f'"{word}"'],
                    fill=PatternFill("solid", fgColor=colour, bgColor=colour),
                ),
            )


def _write_styled(ws: WriteOnlyWorksheet, sheet: StyledRows) -> None:
    for i, w in styled_widths(sheet).items():
        ws.column_dimensions[get_column_letter(i + 1)].width = w
    fonts = {"bold": Font(bold=True), "title": Font(bold=True, size=12)}
    for values, style in sheet.rows:
        out: list[Any] = []
        for i, v in enumerate(values):
            bold = style == "bold" or (style in ("title", "first-bold") and i == 0)
            if isinstance(v, float) or bold:
                cell = WriteOnlyCell(ws, v)
                if isinstance(v, float):
                    cell.number_format = sheet.float_format
                if bold:
                    cell.font = fonts["title" if style == "title" else "bold"]
                out.append(cell)
            else:
                out.append(v)
        ws.append(out)


def write_workbook_openpyxl(path: Path, sheets: Iterable[tuple[str, Sheet]]) -> Path:
    """The old writer: the same sheets through openpyxl's write-only workbook."""
    wb = Workbook(write_only=True)
    for title, sheet in sheets:
        ws = wb.create_sheet(title)
        if isinstance(sheet, Table):
            _write_table(ws, sheet)
        else:
            _write_styled(ws, sheet)
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    return path
