"""Friction a new user reported (issue 28), one test (or two) per item, each failing before
its fix: calibrate's progress, a template error's line, `report` on a run in progress,
not-scored reasons cut at a word, the failed cases named, the sandbox's refusal wording,
the HTML scorer table inside its card at 1400 px, and the console's tables above four
systems."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from queryeval.cli import app
from queryeval.config import DatabaseConfig
from queryeval.embeddings import encode_with_progress
from queryeval.engines import build_engine
from queryeval.errors import InputError
from queryeval.languages import sql
from queryeval.log import RUN, lock_holder, run_lock
from queryeval.runner import load_suite, run_suite
from queryeval.systems import PromptTemplate, load_prompt
from reports_plugin import make_suite

ROOT = Path(__file__).resolve().parent.parent
RAG_VALIDATION = ROOT / "examples" / "rag" / "validation.yaml"
SALES = ROOT / "examples" / "sql" / "fixtures" / "sales"

LONG = (
    "the gold query failed on the engine: Binder Error: Referenced column "
    "customer_identifier not found in FROM clause, candidate bindings: customers.id, "
    "customers.name, orders.customer"
)  # character 120 is inside "candidate"
PLUGIN = '''
from queryeval.cases import Score
from queryeval.scorers import Scorer, register_scorer

LONG = LONG_TEXT


@register_scorer("friction_judge")
class FrictionJudge(Scorer):
    """Unscored with a long reason on odd cases, else 1 when the answer is right."""

    default_threshold = 0.5

    def score(self, case, output, ctx):
        n = int(case.id.split("-")[-1])
        if n % 2:
            return Score.unscored(LONG)
        right = output.final is not None and output.final.answer == "right"
        return Score(value=1.0 if right else 0.0)


def crash_on_even(case, *, skill):
    n = int(case.id.split("-")[-1])
    if n % 2 == 0:
        raise RuntimeError("model exploded")
    return {"answer": "right" if n % 10 < skill * 10 else "wrong"}
'''


def _friction_suite(folder: Path, n: int, skills: list[float], tags: bool = False) -> Path:
    """`n` cases (hardness-tagged when `tags`), the crash_on_even system over `skills`, the
    friction_judge scorer and the console report."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "friction_plugin.py").write_text(PLUGIN.replace("LONG_TEXT", repr(LONG)))
    hardness = ("easy", "medium", "hard")
    with (folder / "cases.jsonl").open("w") as f:
        for i in range(n):
            case = {"id": f"case-{i}", "conversation": [{"content": f"q{i}?"}]}
            if tags:
                case["tags"] = [f"hardness:{hardness[i % 3]}"]
            f.write(json.dumps(case) + "\n")
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: friction\ncases: cases.jsonl\nplugins: [friction_plugin]\n"
        "systems:\n"
        "  - name: sys\n"
        "    callable: friction_plugin:crash_on_even\n"
        f"    params: {{skill: {skills}}}\n"
        "scorers: [friction_judge]\n"
        "settings: {max_unscored_share: 1.0}\n"
        "reports: [console]\n"
    )
    return suite


# --- 1. calibrate says what it is doing and how far ------------------------------------------


def test_calibrate_prints_its_progress_on_stderr(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["calibrate", str(RAG_VALIDATION), "--out", str(tmp_path / "cal.json")]
    )
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"[queryeval] calibrate: reading {RAG_VALIDATION}"
    assert any("50 answer(s)" in line and "50 reference(s) to embed" in line for line in lines)
    assert any(re.search(r"embedded 100/100 texts \(\d+\.\d s\)", line) for line in lines)
    assert any("searching the threshold over 50 similarities" in line for line in lines)
    assert lines[-1].startswith("[queryeval] calibrate: done in ")
    assert "saved:" in result.stdout and "saved:" not in result.stderr  # results apart


def test_a_slow_chunk_is_announced_while_it_runs() -> None:
    class SlowEmbedder:
        """A model that takes its time (a first load on a loaded machine)."""

        def encode(self, texts: list[str]) -> np.ndarray:
            time.sleep(0.6)
            return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

    lines: list[str] = []
    texts = ["a", "bb", "ccc"]
    vectors = encode_with_progress(SlowEmbedder(), texts, lines.append, heartbeat_s=0.1)
    assert vectors.tolist() == SlowEmbedder().encode(texts).tolist()  # the same vectors
    assert any(line.startswith("still embedding: 0/3 texts done") for line in lines)
    assert lines[-1].startswith("embedded 3/3 texts")


# --- 2. a template error names the file and the line ------------------------------------------


def test_an_unknown_template_variable_names_its_line_and_the_near_name(tmp_path: Path) -> None:
    path = tmp_path / "prompt.j2"
    path.write_text("{% block user %}\nAnswer this:\n{{ questoin }}\n{% endblock %}\n")
    with pytest.raises(InputError) as error:
        load_prompt(path)
    assert error.value.line == 3
    assert str(error.value).startswith(f"{path}:3: the template uses unknown variable(s)")
    assert "did you mean 'question'?" in str(error.value)


@pytest.mark.parametrize("blocks", [False, True])
def test_a_template_failing_to_render_names_its_line_and_the_case(
    tmp_path: Path, blocks: bool
) -> None:
    body = "Q: {{ question }}\n\nLevel: {{ metadata.level.name }}\n"
    source = "{% block system %}\nBe brief.\n{% endblock %}\n{% block user %}\n" + body
    source = source + "{% endblock %}\n" if blocks else body
    path = tmp_path / "prompt.j2"
    path.write_text(source)
    template = load_prompt(path)
    variables: dict[str, Any] = {"question": "Why?", "metadata": {}, "case_id": "q7"}
    with pytest.raises(InputError) as error:
        template.render(variables)
    line = 7 if blocks else 3  # the line of `metadata.level.name` in the file
    assert error.value.line == line
    assert str(error.value).startswith(f"{path}:{line}: template error for case 'q7': ")
    assert "has no attribute 'level'" in str(error.value)
    variables["metadata"] = {"level": {"name": "hard"}}
    assert template.render(variables)[-1]["content"].endswith("Level: hard")


def test_a_builtin_template_still_renders() -> None:
    template = PromptTemplate("Q: {{ question }}", "inline.j2")
    assert template.render({"question": "Why?"}) == [{"role": "user", "content": "Q: Why?"}]


# --- 3. report on a directory a run holds ---------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("finished")
    suite = make_suite(folder, n=10)
    suite.write_text(suite.read_text().replace("[html, excel, junit, markdown, json]", "[html]"))
    run_suite(load_suite(suite), folder / "run", progress=False)
    return folder / "run"


def test_report_refuses_a_run_in_progress_unless_partial(finished: Path) -> None:
    html = finished / "report.html"
    html.unlink()
    with run_lock(finished):  # a run writing there (this process)
        assert lock_holder(finished) is not None
        busy = CliRunner().invoke(app, ["report", str(finished)])
        assert busy.exit_code == 2, busy.output
        assert f"error: {finished}: a run is still writing to this directory" in busy.stderr
        assert f"process {os.getpid()}" in busy.stderr and "--partial" in busy.stderr
        assert not html.exists()  # refused before anything was written
        partial = CliRunner().invoke(app, ["report", str(finished), "--partial"])
        assert partial.exit_code == 0, partial.output
        assert f"warning: {finished}: the run is still in progress (process" in partial.stderr
        assert "this report is PARTIAL: 40 of 40 (system, case) result(s)" in partial.stderr
    assert lock_holder(finished) is None
    quiet = CliRunner().invoke(app, ["report", str(finished)])  # complete and free: no word
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert 'id="partial"' not in html.read_text()


def test_report_of_a_stopped_run_says_it_is_partial(finished: Path, tmp_path: Path) -> None:
    run = tmp_path / "stopped"
    run.mkdir()
    info = json.loads((finished / RUN).read_text())
    info["status"] = "running"  # the process died before the end: no lock, not complete
    (run / RUN).write_text(json.dumps(info))
    lines = (finished / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text("\n".join(lines[:25]) + "\n")
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert "the run did not complete (run.json status 'running'" in result.stderr
    assert "PARTIAL: 25 of 40 (system, case) result(s)" in result.stderr
    assert "--resume" in result.stderr
    assert "Partial results: the run had not completed" in (run / "report.html").read_text()


# --- 4., 5. and 8. the console: reasons at a word, failed cases named, grids in full -------------


def _console(folder: Path, capsys: pytest.CaptureFixture[str], **kwargs: Any) -> str:
    suite = _friction_suite(folder, **kwargs)
    capsys.readouterr()
    run_suite(load_suite(suite), folder / "run", progress=False)
    return capsys.readouterr().out


def test_reasons_are_cut_at_a_word_and_failed_cases_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _console(tmp_path, capsys, n=14, skills=[0.5])
    flat = " ".join(out.split())  # rich wraps long lines at words
    # the reason: at most 120 characters, whole words only, an ellipsis where it was cut
    reason = re.search(r"friction_judge: \d+ not scored: (.*?…)", flat)
    assert reason is not None, out
    shown = reason.group(1)
    assert len(shown) <= 120
    words = shown[:-1].split()
    original = LONG.split()[: len(words)]
    assert words[:-1] == original[:-1]  # no word cut in two (a comma before "…" dropped)
    assert words[-1] == original[-1].rstrip(",")
    # the cases where the system crashed: the first five ids, then how many more
    named = "case-0, case-2, case-4, case-6, case-8 and 2 more"
    assert f"7 cases where the system failed: {named}" in flat


def test_one_failed_case_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _console(tmp_path, capsys, n=2, skills=[0.5])
    assert "1 case where the system failed: case-0" in " ".join(out.split())


def test_above_four_systems_the_console_shows_every_breakdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skills = [0.1, 0.3, 0.5, 0.7, 0.9]
    out = _console(tmp_path, capsys, n=12, skills=skills, tags=True)
    assert "friction: 5 configurations" in out
    names = [f"sys[skill={s}]" for s in skills]
    # the breakdown by hardness: one table, a section per system, every value of each
    table = out[out.index("by hardness") :]
    rows = [line for line in table.splitlines() if line.startswith("│")]
    assert [r.split("│")[1].strip() for r in rows if r.split("│")[1].strip()] == names
    assert [r.split("│")[2].strip() for r in rows] == ["easy", "medium", "hard"] * 5
    # each system's failures and crashed cases, named by system
    flat = " ".join(out.split())
    for name in names:
        assert f"{name}: friction_judge: failed 6: system crashed: 6" in flat
        assert f"{name}: 6 cases where the system failed: case-0, case-2" in flat
        assert f"{name}: friction_judge: 6 not scored: " in flat


# --- 6. the sandbox names the statement as written ------------------------------------------------


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("CHECKPOINT", "a CHECKPOINT statement"),
        ("/* compact */ checkpoint", "a CHECKPOINT statement"),
        ("INSERT INTO orders VALUES (1)", "an INSERT statement"),
        ("update orders set status = 'x'", "an UPDATE statement"),
        ("ALTER TABLE orders ADD COLUMN x INT", "an ALTER statement"),
        ("WITH n AS (SELECT 1) INSERT INTO orders SELECT * FROM n", "an INSERT statement"),
        ("EXPLAIN SELECT 1", "an EXPLAIN statement"),
        ("VACUUM", "a VACUUM statement"),
        ("TRUNCATE orders", "a TRUNCATE statement"),
        ("USE other", "a USE statement"),
    ],
)
def test_the_refusal_names_the_statement_with_its_article(query: str, says: str) -> None:
    for dialect in ("duckdb", "sqlite"):
        assert sql.read_only_refusal(query, dialect) == f"not a read-only query but {says}"


@pytest.mark.parametrize("query", ["hello", "42", "total = 1", "answer(1)"])
def test_an_expression_is_not_called_a_statement(query: str) -> None:
    said = f"not a query: {query!r} is an expression, not a SQL statement"
    assert sql.read_only_refusal(query, "duckdb") == said


@pytest.fixture(scope="module")
def duckdb_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    config = DatabaseConfig(engine="duckdb", fixture=str(SALES))
    engine = build_engine("sales", config, ROOT, tmp_path_factory.mktemp("cache"))
    yield engine
    engine.close()


def test_the_engine_reports_checkpoint_as_written(duckdb_engine: Any) -> None:
    run = duckdb_engine.execute("CHECKPOINT")
    assert run.outcome.kind == "refused"
    assert "a CHECKPOINT statement" in run.outcome.message
    assert "COLUMN" not in run.outcome.message


# --- 7. the HTML overview's scorer table stays in its card at 1400 px -----------------------------


@pytest.mark.browser
def test_the_scorer_table_fits_its_card_at_1400_px(finished: Path) -> None:
    from browser_support import chromium, open_page

    CliRunner().invoke(app, ["report", str(finished)])
    with chromium() as browser:
        page, errors = open_page(browser, finished / "report.html")  # 1400 px wide
        cards = page.evaluate(
            """() => [...document.querySelectorAll('#overview .card')].map(card => {
                const table = card.querySelector('table.mini');
                const wrap = table.parentElement;
                const scrolls = getComputedStyle(wrap).overflowX;
                return {card: card.getBoundingClientRect().right,
                        inner: card.getBoundingClientRect().right
                               - parseFloat(getComputedStyle(card).paddingRight),
                        table: table.getBoundingClientRect().right,
                        overflow: card.scrollWidth - card.clientWidth,
                        wrapScrolls: scrolls === 'auto' || scrolls === 'scroll'};
            })"""
        )
    assert errors == []
    assert len(cards) == 4
    for card in cards:
        assert card["overflow"] <= 0, card  # nothing spills out of the card
        assert card["table"] <= card["inner"] + 0.5, card  # every column visible at 1400 px
        assert card["wrapScrolls"], card  # a wider table would scroll inside the card
