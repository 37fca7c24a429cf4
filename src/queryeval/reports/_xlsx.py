"""Write a workbook of tables with XlsxWriter in constant-memory mode: each row goes to disk
as soon as the next one starts, so a 100,000-case workbook never holds its cells in memory.

A sheet is a `Table` (styled header, frozen panes, a filter, number formats, wrapped long
text, conditional colouring) or `StyledRows` (free-form blocks of figures, e.g. seed 001's
Statistics sheet). Cell text is always written as text: a string that starts with `=` stays
a string (never a formula), and URLs are not turned into links.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xlsxwriter.format import Format
    from xlsxwriter.workbook import Workbook
    from xlsxwriter.worksheet import Worksheet

HEADER_FILL = "DDEBF7"
MAX_CELL = 32_000  # Excel holds at most 32,767 characters in a cell
MAX_ROWS = 1_048_576  # Excel's rows per sheet
_SAMPLE = 2000  # rows looked at to size the columns
_BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\]")
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # not allowed in cell text by XML 1.0
_SCALE = {  # the 0..1 red-yellow-green colour scale
    "type": "3_color_scale",
    "min_type": "num",
    "min_value": 0,
    "min_color": "#F8696B",
    "mid_type": "num",
    "mid_value": 0.5,
    "mid_color": "#FFEB84",
    "max_type": "num",
    "max_value": 1,
    "max_color": "#63BE7B",
}
_VERDICT_FILLS = (("PASS", "#C6EFCE"), ("FAIL", "#FFC7CE"))


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


@dataclass
class StyledRows:
    """Free-form rows, each with a style: '' (plain), 'bold' (every cell), 'first-bold' (the
    first cell) or 'title' (the first cell bold and larger). Floats get `float_format`;
    columns are sized to their longest value within [10, `max_width`]."""

    rows: list[tuple[list[Any], str]]
    float_format: str = "0.000"
    max_width: int = 40


Sheet = Table | StyledRows


def sheet_title(name: str, taken: Sequence[str]) -> str:
    """A legal, unique sheet title (31 characters, none of []:*?/\\).

    >>> sheet_title("a/b", ["Overview"]), sheet_title("overview", ["Overview"])
    ('a_b', 'overview (2)')
    """
    base = _BAD_SHEET_CHARS.sub("_", name).strip("'") or "Sheet"
    title, n = base[:31], 2
    while title.lower() in {t.lower() for t in taken}:
        suffix = f" ({n})"
        title, n = base[: 31 - len(suffix)] + suffix, n + 1
    return title


def cell_text(value: str) -> str:
    """Text as a cell holds it: cut at the cell limit (saying so), control characters
    replaced."""
    if len(value) > MAX_CELL:
        value = value[:MAX_CELL] + "… [cut: Excel cell limit]"
    return _ILLEGAL.sub("\ufffd", value)


def table_widths(table: Table) -> list[float]:
    """Column widths in characters: the longest line among the header and the first rows."""
    widths = [float(len(c)) for c in table.columns]
    for row in table.rows[:_SAMPLE]:
        for i, v in enumerate(row):
            if v is None:
                continue
            text = f"{v:.3f}" if isinstance(v, float) else str(v)
            longest = max((len(line) for line in text.split("\n")), default=0)
            widths[i] = max(widths[i], longest)
    return [min(max(10.0, w + 2), table.max_width) for w in widths]


def styled_widths(sheet: StyledRows) -> dict[int, int]:
    """Column index (0-based) -> width of a `StyledRows` sheet."""
    widths: dict[int, int] = {}
    for values, _ in sheet.rows:
        for i, v in enumerate(values):
            if v is not None:
                widths[i] = max(widths.get(i, 0), len(str(v)))
    return {i: min(max(10, w + 2), sheet.max_width) for i, w in widths.items()}


class _Formats:
    """One XlsxWriter Format per distinct set of properties (a workbook caps their number)."""

    def __init__(self, wb: Workbook) -> None:
        self._wb = wb
        self._made: dict[tuple[tuple[str, Any], ...], Format] = {}

    def __call__(self, **props: Any) -> Format | None:
        if not props:
            return None
        key = tuple(sorted(props.items()))
        fmt = self._made.get(key)
        if fmt is None:
            fmt = self._made[key] = self._wb.add_format(props)
        return fmt


def _non_finite(v: float) -> str | None:
    """NaN and infinities as text (Excel has no such numbers); None for a finite float."""
    return None if math.isfinite(v) else str(v)


def _write_table(ws: Worksheet, table: Table, fmt: _Formats) -> None:
    widths = table_widths(table)
    for i, width in enumerate(widths):
        ws.set_column(i, i, width)
    rows = table.rows
    # beyond Excel's limit: as many rows as fit beside the header and a note saying so
    shown = len(rows) if len(rows) < MAX_ROWS else MAX_ROWS - 2
    if rows:
        ws.freeze_panes(table.freeze)
    wrap = fmt(text_wrap=True, valign="top")
    top = fmt(valign="top")
    header = fmt(bold=True, bg_color="#" + HEADER_FILL, pattern=1, text_wrap=True, valign="top")
    for c, name in enumerate(table.columns):
        ws.write_string(0, c, cell_text(name), header)
    number = [
        fmt(num_format=table.number_formats[c]) if c in table.number_formats else None
        for c in table.columns
    ]
    number_top = [
        fmt(num_format=table.number_formats[c], valign="top") if c in table.number_formats else None
        for c in table.columns
    ]
    limits = [w - 2 for w in widths]
    write_string, write_number, write_boolean = ws.write_string, ws.write_number, ws.write_boolean
    for r in range(shown):
        row = rows[r]
        tall = any(isinstance(v, str) and "\n" in v for v in row)
        n = r + 1
        for c, v in enumerate(row):
            if v is None:
                continue
            if v is True or v is False:
                write_boolean(n, c, v)
            elif isinstance(v, float):
                text = _non_finite(v)
                if text is not None:
                    write_string(n, c, text, top if tall else None)
                elif number[c] is not None:
                    write_number(n, c, v, number_top[c] if tall else number[c])
                else:
                    write_number(n, c, v)
            elif isinstance(v, int):
                write_number(n, c, v)
            else:
                text = cell_text(v if isinstance(v, str) else str(v))
                if not text:
                    if tall:
                        ws.write_blank(n, c, None, top)  # Excel keeps no empty text
                elif "\n" in text or len(text) > limits[c]:
                    write_string(n, c, text, wrap)
                else:
                    write_string(n, c, text, top if tall else None)
    last = shown
    if shown < len(rows):
        last += 1
        ws.write_string(
            last,
            0,
            f"… {len(rows) - shown:,} more rows not shown: an Excel sheet holds at most "
            f"{MAX_ROWS:,} rows (every record is in results.jsonl)",
        )
    ws.autofilter(0, 0, last, max(1, len(table.columns)) - 1)
    if not rows:
        return
    for name in table.scales:
        col = table.columns.index(name)
        ws.conditional_format(1, col, last, col, dict(_SCALE))
    for name in table.verdicts:
        col = table.columns.index(name)
        for word, colour in _VERDICT_FILLS:
            ws.conditional_format(
                1,
                col,
                last,
                col,
                {
                    "type": "cell",
                    "criteria": "==",
                    "value": f'"{word}"',
                    "format": fmt(bg_color=colour),
                },
            )


def _write_styled(ws: Worksheet, sheet: StyledRows, fmt: _Formats) -> None:
    for i, width in styled_widths(sheet).items():
        ws.set_column(i, i, width)
    number = fmt(num_format=sheet.float_format)
    for r, (values, style) in enumerate(sheet.rows):
        for c, v in enumerate(values):
            bold = style == "bold" or (style in ("title", "first-bold") and c == 0)
            props: dict[str, Any] = {}
            if bold:
                props["bold"] = True
                if style == "title":
                    props["font_size"] = 12
            if v is None:
                if props:
                    ws.write_blank(r, c, None, fmt(**props))
            elif v is True or v is False:
                ws.write_boolean(r, c, v, fmt(**props))
            elif isinstance(v, float) and math.isfinite(v):
                ws.write_number(
                    r, c, v, fmt(num_format=sheet.float_format, **props) if props else number
                )
            elif isinstance(v, int) and not isinstance(v, bool):
                ws.write_number(r, c, v, fmt(**props))
            else:
                text = _non_finite(v) if isinstance(v, float) else cell_text(str(v))
                if text:
                    ws.write_string(r, c, text, fmt(**props))
                elif props:
                    ws.write_blank(r, c, None, fmt(**props))


def write_workbook(path: Path, sheets: Iterable[tuple[str, Sheet]]) -> Path:
    """Write `(title, sheet)` pairs, in order, to an .xlsx file at `path` (constant memory:
    each sheet may be built just before it is written).

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "t.xlsx"
    >>> write_workbook(out, [("T", Table(["a", "b"], [[1, "x"], [0.5, None]]))]).exists()
    True
    """
    import tempfile

    import xlsxwriter

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")  # an earlier report stays until done
    # rows wait in files until the sheet is assembled: beside the report (the run folder has
    # room for a copy of it; /tmp may be small), removed whatever happens
    with tempfile.TemporaryDirectory(prefix=f".{path.name}.", dir=path.parent) as rows_dir:
        wb = xlsxwriter.Workbook(
            str(partial),
            {
                "constant_memory": True,
                "tmpdir": rows_dir,
                "strings_to_formulas": False,
                "strings_to_urls": False,
                "strings_to_numbers": False,
            },
        )
        fmt = _Formats(wb)
        try:
            for title, sheet in sheets:
                ws = wb.add_worksheet(title)
                if isinstance(sheet, Table):
                    _write_table(ws, sheet, fmt)
                else:
                    _write_styled(ws, sheet, fmt)
            wb.close()
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
    return path
