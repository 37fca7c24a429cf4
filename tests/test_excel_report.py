"""Seed 001's Excel report: Overview (one row per case, details cell) and Statistics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import load_workbook

from queryeval.runner import load_suite, run_suite

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def sdmx_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sdmx") / "run"
    run_suite(load_suite(ROOT / "examples" / "sdmx" / "suite.yaml"), out, progress=False)
    return out


def test_overview_sheet_has_one_row_per_case_and_seed_columns(sdmx_run: Path) -> None:
    wb = load_workbook(sdmx_run / "report.xlsx")
    assert wb.sheetnames[:2] == ["Overview", "Statistics"]
    ws = wb["Overview"]
    header = [c.value for c in ws[1]]
    for col in (
        "id",
        "name",
        "question",
        "macro recall",
        "macro precision",
        "indicator selection details",
    ):
        assert col in header
    assert ws.max_row == 1 + 2 * 16  # two systems x 16 cases
    assert ws.freeze_panes == "B2"
    assert ws.auto_filter.ref
    rows = {(r[header.index("system")], r[0]): r for r in ws.iter_rows(min_row=2, values_only=True)}
    cell = rows[("baseline", "weo-inflation-turkiye")][header.index("indicator selection details")]
    assert cell.startswith(
        "INDICATOR\n[recall: 1.00, precision: 0.50]\nTrue Positives [1]\n"
        "  * PCPIPCH: Inflation, average consumer prices, percent change\n"
        "False Negatives [0]\nFalse Positives [1]\n"
        "  * PCPIEPCH: Inflation, end of period consumer prices, percent change"
    )
    extra = rows[("baseline", "weo-current-account-china")][
        header.index("indicator selection details")
    ]
    assert "FREQ (not in target)" in extra and "dimensions not in target: FREQ" in extra
    recall = rows[("baseline", "weo-inflation-turkiye")][header.index("macro recall")]
    assert isinstance(recall, int | float) and recall == 1.0  # a number, not text


def test_statistics_sheet_reports_data_query_metrics(sdmx_run: Path) -> None:
    ws = load_workbook(sdmx_run / "report.xlsx")["Statistics"]
    cells = [[c.value for c in row] for row in ws.iter_rows()]
    summary = json.loads((sdmx_run / "summary.json").read_text())
    expected = summary["systems"]["baseline"]["scorers"]["term_selection"]["aggregate"][
        "data_query_metrics"
    ]
    start = next(i for i, r in enumerate(cells) if r[0] == "Data Query Metrics")
    block = {r[0]: r[1] for r in cells[start + 1 : start + 6]}
    assert block["macro precision"] == pytest.approx(expected["macro_precision"])
    assert block["macro recall"] == pytest.approx(expected["macro_recall"])
    assert block["cases"] == 16


def test_codelist_names_fill_missing_names(tmp_path: Path) -> None:
    from queryeval.scorers._codelists import check_and_name, load_codelists

    lists = load_codelists(ROOT / "examples" / "sdmx" / "codelists.xml")
    assert lists["CL_COUNTRY"]["MEX"] == "Mexico"
    selection = [
        {
            "dataset_id": "D",
            "dimensions": [
                {"dimension_name": "COUNTRY", "values": [{"id": "MEX"}, {"id": "XXX"}]},
                {"dimension_name": "UNIT", "values": [{"id": "U1"}]},
            ],
        }
    ]
    named, unknown = check_and_name(selection, lists, {})
    assert named[0]["dimensions"][0]["values"][0] == {"id": "MEX", "name": "Mexico"}
    assert unknown == [{"dimension": "COUNTRY", "id": "XXX", "codelist": "CL_COUNTRY"}]
