"""The XlsxWriter workbook against the openpyxl writer it replaced (tests/excel_reference.py):
the same runs written both ways and read back with openpyxl give the same sheets, values,
number formats, fonts, fills, alignment, column widths, panes, filters and conditional
formats. Then what the new writer does on its own: text never becomes a formula, NaN and
infinities are shown, rows beyond Excel's limit are announced, a failed write leaves the
previous report in place."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook
from openpyxl.utils import get_column_letter

from excel_reference import write_workbook_openpyxl
from queryeval.log import read_log
from queryeval.reports import _xlsx
from queryeval.reports._excel import workbook_sheets
from queryeval.reports._xlsx import StyledRows, Table, write_workbook
from queryeval.runner import load_suite, plan_run, run_suite
from reports_plugin import make_suite

ROOT = Path(__file__).resolve().parent.parent


def _sheets_of(run: Path, suite_path: Path) -> list[tuple[str, Any]]:
    plan = plan_run(load_suite(suite_path))
    records = read_log(run).records
    summary = json.loads((run / "summary.json").read_text())
    return list(workbook_sheets(summary, plan.cases, records, plan.scorers))


@pytest.fixture(scope="module")
def sdmx_sheets(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Any]]:
    out = tmp_path_factory.mktemp("sdmx") / "run"
    suite = ROOT / "examples" / "sdmx" / "suite.yaml"
    run_suite(load_suite(suite), out, progress=False, write_reports=False)
    return _sheets_of(out, suite)


@pytest.fixture(scope="module")
def grid_sheets(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Any]]:
    folder = tmp_path_factory.mktemp("grid")
    suite = make_suite(folder)
    run_suite(load_suite(suite), folder / "run", progress=False, write_reports=False)
    return _sheets_of(folder / "run", suite)


def _colour(c: Any) -> str | None:
    return None if c is None or c.rgb in (None, "00000000") else str(c.rgb)[-6:]


def _cell(c: Any) -> tuple[Any, ...]:
    fill = _colour(c.fill.fgColor) if c.fill.fill_type == "solid" else None
    return (
        c.value,
        "n" if c.value is None else c.data_type,  # an empty cell has no type to compare
        c.number_format,
        bool(c.font.b),
        c.font.sz or 11.0,  # a font without a size shows the default, 11
        fill,
        bool(c.alignment.wrap_text),
        c.alignment.vertical,
    )


def _rules(ws: Any) -> list[tuple[Any, ...]]:
    out = []
    for cf in ws.conditional_formatting:
        for rule in cf.rules:
            scale = None
            if rule.colorScale is not None:
                scale = (
                    [(v.type, float(v.val)) for v in rule.colorScale.cfvo],
                    [str(c.rgb)[-6:] for c in rule.colorScale.color],
                )
            # a conditional fill's colour is its bgColor (the old writer also set fgColor)
            fill = _colour(rule.dxf.fill.bgColor) if rule.dxf is not None else None
            out.append((str(cf.sqref), rule.type, rule.operator, rule.formula, scale, fill))
    return sorted(out, key=repr)


def _widths(ws: Any) -> dict[str, float]:
    """Column letter -> width (a <col> element may cover several equal columns)."""
    out = {}
    for d in ws.column_dimensions.values():
        if d.customWidth:
            for i in range(d.min, d.max + 1):
                out[get_column_letter(i)] = d.width
    return out


def _read(path: Path) -> dict[str, dict[str, Any]]:
    wb = load_workbook(path)
    book = {}
    for ws in wb.worksheets:
        book[ws.title] = {
            "cells": {c.coordinate: _cell(c) for row in ws.iter_rows() for c in row},
            "widths": _widths(ws),
            "freeze": ws.freeze_panes,
            "filter": ws.auto_filter.ref,
            "rules": _rules(ws),
        }
    return book


def _same_value(new: Any, old: Any) -> bool:
    if isinstance(old, float) and isinstance(new, int | float):
        # XlsxWriter writes 16 significant digits (Excel keeps 15); openpyxl wrote repr()
        return math.isclose(new, old, rel_tol=1e-15, abs_tol=0.0)
    return bool(new == old and type(new) is type(old))


def _assert_same_workbook(new_path: Path, old_path: Path) -> int:
    """Everything a reader sees is the same; returns how many cells were compared."""
    new, old = _read(new_path), _read(old_path)
    assert list(new) == list(old)
    compared = 0
    for title in old:
        n, o = new[title], old[title]
        assert n["freeze"] == o["freeze"], title
        assert n["filter"] == o["filter"], title
        assert n["rules"] == o["rules"], title
        assert n["widths"].keys() == o["widths"].keys(), title
        for col, width in o["widths"].items():
            # XlsxWriter stores the width a reader sees plus Excel's 5-pixel cell padding,
            # rounded to whole pixels (7 per character); openpyxl stored the number as given
            assert 0.70 <= n["widths"][col] - width <= 0.72 + 1 / 7, (title, col)
        filled = {k for k, v in o["cells"].items() if v[0] is not None or v[2:] != _BLANK}
        filled |= {k for k, v in n["cells"].items() if v[0] is not None or v[2:] != _BLANK}
        for coordinate in sorted(filled):
            nc = n["cells"].get(coordinate, (None, "n", *_BLANK))
            oc = o["cells"].get(coordinate, (None, "n", *_BLANK))
            assert _same_value(nc[0], oc[0]), (title, coordinate, nc, oc)
            assert nc[1:] == oc[1:], (title, coordinate, nc, oc)
            compared += 1
    return compared


_BLANK = ("General", False, 11.0, None, False, None)


def _both_ways(sheets: list[tuple[str, Any]], folder: Path) -> tuple[Path, Path]:
    return (
        write_workbook(folder / "new.xlsx", sheets),
        write_workbook_openpyxl(folder / "old.xlsx", sheets),
    )


def test_sdmx_run_reads_back_as_the_old_writer_wrote_it(
    sdmx_sheets: list[tuple[str, Any]], tmp_path: Path
) -> None:
    assert [t for t, _ in sdmx_sheets][:4] == [
        "Overview",
        "Statistics",
        "term_selection",
        "Components",
    ]
    new, old = _both_ways(sdmx_sheets, tmp_path)
    cells = _assert_same_workbook(new, old)
    assert cells > 1000  # two systems x 16 cases over several sheets, not an empty compare


def test_grid_run_reads_back_as_the_old_writer_wrote_it(
    grid_sheets: list[tuple[str, Any]], tmp_path: Path
) -> None:
    titles = [t for t, _ in grid_sheets]
    assert {"Judge", "Gates", "Configurations"} <= set(titles)
    new, old = _both_ways(grid_sheets, tmp_path)
    assert _assert_same_workbook(new, old) > 1000


def test_every_cell_kind_reads_back_as_the_old_writer_wrote_it(tmp_path: Path) -> None:
    table = Table(
        columns=["id", "score", "count", "flag", "text", "note"],
        rows=[
            ["a", 0.1 + 0.2, 3, True, "short", None],
            ["b", 1 / 3, -7, False, "two\nlines", "x" * 200],
            ["c", None, 2**40, None, "tab\tand\x01control", 12.5],
            ["d", 0.0, 0, True, "", "ünïcødé ✓"],
        ],
        number_formats={"score": "0.00", "note": "0.0"},
        scales=["score"],
        verdicts=["text"],
        freeze="B2",
        max_width=30,
    )
    empty = Table(columns=["a", "b"], rows=[], scales=["a"], verdicts=["b"])
    stats = StyledRows(
        [
            (["Suite", "s", ""], ""),
            ([], ""),
            (["System: x"], "title"),
            (["mean", "low", None, "n"], "bold"),
            (["m", 0.123456, 7, None, True], ""),
            (["Data Query Metrics", 1.5], "first-bold"),
        ]
    )
    sheets = [("T", table), ("Empty", empty), ("Stats", stats)]
    new, old = _both_ways(sheets, tmp_path)
    _assert_same_workbook(new, old)


def test_text_stays_text_and_non_finite_numbers_are_shown(tmp_path: Path) -> None:
    # the old writer turned "=..." into a formula and wrote NaN/inf as empty cells
    table = Table(
        columns=["q", "v"],
        rows=[
            ['=HYPERLINK("http://x","y")', math.nan],
            ["http://example.com/a", math.inf],
            ["+1", -math.inf],
            ["x" * 40_000, 1.0],
        ],
        number_formats={"v": "0.000"},
    )
    path = write_workbook(tmp_path / "r.xlsx", [("T", table)])
    ws = load_workbook(path)["T"]
    assert ws["A2"].value == '=HYPERLINK("http://x","y")' and ws["A2"].data_type == "s"
    assert ws["A3"].value == "http://example.com/a" and ws["A3"].hyperlink is None
    assert [ws[f"B{r}"].value for r in (2, 3, 4)] == ["nan", "inf", "-inf"]
    assert ws["A5"].value.endswith("… [cut: Excel cell limit]")
    assert len(ws["A5"].value) == _xlsx.MAX_CELL + len("… [cut: Excel cell limit]")


def test_rows_beyond_the_sheet_limit_are_announced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_xlsx, "MAX_ROWS", 6)
    fits = Table(columns=["n"], rows=[[i] for i in range(5)], scales=["n"])
    over = Table(columns=["n"], rows=[[i] for i in range(9)], scales=["n"])
    path = write_workbook(tmp_path / "r.xlsx", [("fits", fits), ("over", over)])
    wb = load_workbook(path)
    assert [c.value for c in wb["fits"]["A"]] == ["n", 0, 1, 2, 3, 4]
    cells = [c.value for c in wb["over"]["A"]]
    assert cells[:5] == ["n", 0, 1, 2, 3]
    assert cells[5].startswith("… 5 more rows not shown") and len(cells) == 6
    assert wb["over"].auto_filter.ref == "A1:A6"


def test_a_failed_write_leaves_the_previous_report(tmp_path: Path) -> None:
    path = write_workbook(tmp_path / "report.xlsx", [("T", Table(["a"], [[1]]))])
    before = path.read_bytes()

    def sheets() -> Iterator[tuple[str, Any]]:
        yield "T", Table(["a"], [[2]])
        raise RuntimeError("a sheet failed to build")

    with pytest.raises(RuntimeError, match="failed to build"):
        write_workbook(path, sheets())
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.xlsx"]  # no leftovers
