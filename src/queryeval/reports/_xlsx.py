"""Write one table to a write-only openpyxl sheet: styled header, frozen panes, a filter,
number formats, wrapped long text, conditional colouring. Write-only mode streams rows to
disk, so a 100,000-case workbook does not hold every cell object in memory."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openpyxl import Workbook

HEADER_FILL = "DDEBF7"
MAX_CELL = 32_000  # Excel holds at most 32,767 characters in a cell
_SAMPLE = 2000  # rows looked at to size the columns
_BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\]")
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # refused by openpyxl in cell text


@dataclass
class Table:
    """Rows under a header, with how to present them."""

    columns: list[str]
    rows: list[list[Any]]
    number_formats: dict[str, str] = field(default_factory=dict)  # column -> format of floats
    scales: list[str] = field(default_factory=list)  # 0..1 red-yellow-green colour scale
    verdicts: list[str] = field(default_factory=list)  # PASS green, FAIL red
    freeze: str = "A2"
    max_width: int = 60


def sheet_title(name: str, taken: Sequence[str]) -> str:
    """A legal, unique sheet title (31 characters, none of []:*?/\\)."""
    base = _BAD_SHEET_CHARS.sub("_", name).strip("'") or "Sheet"
    title, n = base[:31], 2
    while title.lower() in {t.lower() for t in taken}:
        suffix = f" ({n})"
        title, n = base[: 31 - len(suffix)] + suffix, n + 1
    return title


def _text(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > MAX_CELL:
            value = value[:MAX_CELL] + "… [cut: Excel cell limit]"
        return _ILLEGAL.sub("\ufffd", value)
    return value


def _widths(table: Table) -> list[float]:
    widths = [float(len(c)) for c in table.columns]
    for row in table.rows[:_SAMPLE]:
        for i, v in enumerate(row):
            if v is None:
                continue
            text = f"{v:.3f}" if isinstance(v, float) else str(v)
            longest = max((len(line) for line in text.split("\n")), default=0)
            widths[i] = max(widths[i], longest)
    return [min(max(10.0, w + 2), table.max_width) for w in widths]


def write_table(wb: Workbook, title: str, table: Table) -> None:
    """Append a sheet named `title` holding `table` to a write-only workbook."""
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.formatting.rule import CellIsRule, ColorScaleRule
    from openpyxl.styles import Alignment, Font, PatternFill
    from openpyxl.utils import get_column_letter

    ws = wb.create_sheet(title)
    widths = _widths(table)
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
                text = _text(v if isinstance(v, str) else str(v))
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
