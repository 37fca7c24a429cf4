"""The benchmark breakdowns of imported suites in the console, the Excel Statistics sheet and
the HTML report: Spider hardness and BIRD difficulty in the benchmark's order, Gorilla per
schema, with the figures of the run."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from openpyxl import load_workbook
from typer.testing import CliRunner

from benchmark_files import DEV, spider_folder, write
from queryeval.cli import app
from test_import_bird_spider2 import SEP, bird_folder
from test_importers_gorilla import write_inputs

runner = CliRunner()

# Spider's dev set here: two easy, two medium, one hard and one extra question
SPIDER_DEV = [
    *DEV,
    {
        "db_id": "concert",
        "question": "Singers older than the average?",
        "query": "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)",
    },
    {
        "db_id": "concert",
        "question": "The country with most singers over 20, if more than one?",
        "query": "SELECT country, count(*) FROM singer WHERE age > 20 GROUP BY country "
        "HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT 1",
    },
]
SPIDER_PREDICTIONS = [
    "SELECT count(singer_id) AS n FROM singer",  # easy: right
    "SELECT name FROM singer WHERE age > 35",  # easy: wrong
    "SELECT name, age FROM singer ORDER BY age DESC",  # medium: right
    "SELECT count(*), year FROM concert GROUP BY year",  # medium: right
    "SELECT name FROM singer WHERE age > 30",  # hard: wrong
    SPIDER_DEV[5]["query"],  # extra: right
]
# value, cases, pass rate (= execution match) in Spider's order (not extra, easy, hard, medium)
HARDNESS = [["easy", 2, 0.5], ["medium", 2, 1.0], ["hard", 1, 0.0], ["extra", 1, 1.0]]
# BIRD's dev set of test_import_bird_spider2 and predictions: right, right, wrong, no query
DIFFICULTY = [["simple", 2, 0.5], ["moderate", 1, 1.0], ["challenging", 1, 0.0]]


def cli(*args: str | Path) -> Any:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result


def run(suite: Path, out: Path) -> str:
    """`queryeval run`; returns its console output."""
    return str(cli("run", suite / "suite.yaml", "--out", out, "--no-progress").output)


def console_table(output: str, title: str) -> list[list[str]]:
    """The body rows of the console table titled `title` (cells split on the box bars)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title)
    rows = []
    for line in lines[start + 4 :]:
        if not line.strip().startswith("│"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("│").split("│")])
    return rows


def excel_table(path: Path, title: str) -> list[list[Any]]:
    """The header and rows under `title` in the Statistics sheet, up to the next blank row."""
    sheet = [list(r) for r in load_workbook(path)["Statistics"].iter_rows(values_only=True)]
    start = next(i for i, r in enumerate(sheet) if r and r[0] == title)
    header = sheet[start + 1]
    while header and header[-1] is None:
        header.pop()
    out = []
    for row in sheet[start + 1 :]:
        if all(v is None for v in row):
            break
        out.append(row[: len(header)])
    return out


class _Tables(HTMLParser):
    """The tables of the HTML report's breakdown section: per `<h3>`, its rows' cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = self.heading = False
        self.tables: dict[str, list[list[str]]] = {}
        self.title = ""
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section":
            self.inside = ("id", "breakdown") in attrs
        elif self.inside and tag == "h3":
            self.heading, self.title = True, ""
        elif self.inside and tag == "tr":
            self.tables.setdefault(self.title, []).append([])
        elif self.inside and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.inside = False
        elif tag == "h3":
            self.heading = False
        elif tag in ("td", "th") and self.cell is not None:
            self.tables[self.title][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.heading and not self.title:
            self.title = data.strip()
        elif self.cell is not None:
            self.cell.append(data)


def html_tables(path: Path) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(path.read_text())
    return parser.tables


def test_spider_hardness_in_console_excel_and_html(tmp_path: Path) -> None:
    folder = spider_folder(tmp_path, variant=False)
    write(folder / "dev.json", json.dumps(SPIDER_DEV))
    write(folder / "dev_gold.sql", "".join(f"{d['query']}\tconcert\n" for d in SPIDER_DEV))
    preds = write(tmp_path / "model.txt", "\n".join(SPIDER_PREDICTIONS) + "\n")
    cli("import", "spider", folder, "--out", tmp_path / "suite", "-p", preds)
    reports = yaml.safe_load((tmp_path / "suite" / "suite.yaml").read_text())["reports"]
    assert reports == ["console", "json", "html", "excel"]
    output = run(tmp_path / "suite", tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    entry = summary["systems"]["model"]
    labels = list(entry["scorers"])
    ex, exact = 3 + labels.index("execution_match"), 3 + labels.index("spider_exact_match")
    spider_exact = [
        entry["by_tag"][f"hardness:{v}"]["means"]["spider_exact_match"] for v, *_ in HARDNESS
    ]
    # exact match compares no values, and count(singer_id) is not count(*)
    assert spider_exact == [0.5, 1.0, 0.0, 1.0]

    # console: value, cases, pass rate, then each scorer's mean
    rows = console_table(output, "by hardness")
    assert [[*r[:3], r[ex]] for r in rows] == [
        [v, str(n), f"{p:.3f}", f"{p:.3f}"] for v, n, p in HARDNESS
    ]
    assert [r[exact] for r in rows] == [f"{v:.3f}" for v in spider_exact]

    excel = excel_table(tmp_path / "run" / "report.xlsx", "by hardness")
    assert excel[0] == ["hardness", "cases", "pass rate", *labels]
    assert [[*r[:3], r[ex]] for r in excel[1:]] == [[v, n, p, p] for v, n, p in HARDNESS]
    assert [r[exact] for r in excel[1:]] == spider_exact

    tables = html_tables(tmp_path / "run" / "report.html")
    assert list(tables) == ["By hardness"]  # no other family: no db, no turn
    table = tables["By hardness"]
    assert table[0] == ["hardness", "system", "cases", "pass rate", *labels]
    assert [[*r[:4], r[ex + 1]] for r in table[1:]] == [
        [v, "model", str(n), f"{p:.3f}", f"{p:.3f}"] for v, n, p in HARDNESS
    ]
    # the tag table follows the same order
    html = (tmp_path / "run" / "report.html").read_text()
    tags = re.findall(r'<a href="#tag=hardness%3A(\w+)">hardness:', html)
    assert tags == ["easy", "medium", "hard", "extra"]


def test_bird_difficulty_in_console_excel_and_html(tmp_path: Path) -> None:
    folder = bird_folder(tmp_path)
    preds = {
        "0": f"SELECT name FROM singer WHERE country = 'FR'{SEP}concert",
        "1": f"SELECT DISTINCT country FROM singer{SEP}concert",
        "2": f"SELECT name, singer_id FROM singer{SEP}concert",
        "3": 0,
    }
    pred_file = write(tmp_path / "predict_dev.json", json.dumps(preds))
    cli("import", "bird", folder, "--out", tmp_path / "suite", "-p", f"gpt={pred_file}")
    output = run(tmp_path / "suite", tmp_path / "run")

    rows = console_table(output, "by difficulty")
    assert [r[:3] for r in rows] == [[v, str(n), f"{p:.3f}"] for v, n, p in DIFFICULTY]
    excel = excel_table(tmp_path / "run" / "report.xlsx", "by difficulty")
    assert [r[:3] for r in excel[1:]] == DIFFICULTY
    table = html_tables(tmp_path / "run" / "report.html")["By difficulty"]
    assert [r[:4] for r in table[1:]] == [[v, "gpt", str(n), f"{p:.3f}"] for v, n, p in DIFFICULTY]


def test_gorilla_per_schema_in_excel_and_html(tmp_path: Path) -> None:
    query_file, _, _ = write_inputs(tmp_path)
    cli("import", "gorilla", query_file, tmp_path / "experimental-results", "--out", tmp_path / "s")
    suite = tmp_path / "s" / "suite.yaml"
    data = yaml.safe_load(suite.read_text())
    data["settings"] = {"cache_dir": str(tmp_path / "cache")}
    suite.write_text(yaml.safe_dump(data))
    run(tmp_path / "s", tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    entry = summary["systems"]["late-model"]
    excel = excel_table(tmp_path / "run" / "report.xlsx", "by schema")
    labels = excel[0][3:]  # the suite's order of scorers
    assert excel[0][:3] == ["schema", "cases", "pass rate"]
    assert sorted(labels) == sorted(entry["scorers"])
    # each scorer's mean per schema: the scorer's own per-schema figures (3 and 2 cases)
    per_schema = {lb: entry["scorers"][lb]["aggregate"]["per_schema"] for lb in labels}
    expected = [
        [schema, cases, *(per_schema[lb][schema]["mean"] for lb in labels)]
        for schema, cases in (("0", 3), ("1", 2))
    ]
    assert len({tuple(row) for row in expected}) == 2  # the schemas' figures differ
    # the Statistics sheet lists the systems in turn: the late model's table is the second
    sheet = [list(r) for r in load_workbook(tmp_path / "run" / "report.xlsx")["Statistics"]
             .iter_rows(values_only=True)]  # fmt: skip
    starts = [i for i, r in enumerate(sheet) if r and r[0] == "by schema"]
    assert len(starts) == 2
    got = [[r[0], r[1], *r[3 : 3 + len(labels)]] for r in sheet[starts[1] + 2 : starts[1] + 4]]
    assert got == [[s, n, *map(pytest.approx, means)] for s, n, *means in expected]

    table = html_tables(tmp_path / "run" / "report.html")["By schema"]
    assert table[0] == ["schema", "system", "cases", "pass rate", *labels]
    late = [r for r in table[1:] if r[1] == "late-model"]
    assert [[r[0], int(r[2]), *r[4:]] for r in late] == [
        [s, n, *(f"{v:.3f}" for v in means)] for s, n, *means in expected
    ]


def test_excel_is_listed_only_where_xlsxwriter_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from queryeval.importers import _suite

    assert _suite.default_reports() == ["console", "json", "html", "excel"]
    monkeypatch.setattr(_suite, "find_spec", lambda name: None)
    assert _suite.default_reports() == ["console", "json", "html"]
