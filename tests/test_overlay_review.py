"""`queryeval overlay --from-review`: a human review's gold corrections as an overlay, with
who and when; the viewer's proposals stay `proposed`, the golds a run applied do not (issue 32)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from audit_support import make_suite
from queryeval.cli._app import app
from queryeval.config import load_overlay
from queryeval.viewer._review import add_gold


def _invoke(*args: str):
    return CliRunner().invoke(app, ["overlay", *args])


def test_viewer_proposals_become_proposed_entries_with_provenance(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    made = add_gold(run, "ok-count", "SELECT count(*) FROM people WHERE 1", note="off by one",
                    reviewer="ana")  # fmt: skip
    out = tmp_path / "from-review.yaml"
    result = _invoke("--from-review", str(run), "--out", str(out))
    assert result.exit_code == 0, result.output
    overlay = load_overlay(out)
    (entry,) = overlay.entries
    assert (entry.case_id, entry.gold and entry.gold.text) == (
        "ok-count",
        "SELECT count(*) FROM people WHERE 1",
    )
    assert entry.proposed and entry.reason == "off by one"
    assert (entry.reviewer, entry.at) == ("ana", made["at"])
    assert str(run / "review.json") in entry.source
    assert overlay.applied == {}  # a proposal is not applied until a person accepts it
    assert overlay.provenance["sha256"] and overlay.provenance["file"] == str(run / "review.json")


def test_golds_the_run_applied_are_accepted(tmp_path: Path) -> None:
    review_file = tmp_path / "review.yaml"
    review_file.write_text(
        "golds:\n"
        "  - {case_id: ok-count, gold: 'SELECT 2', note: wrong table, reviewer: bo}\n"
        "  - case_id: ok-sum\n"
        "    gold: {query: {text: 'SELECT 3', database: shop}}\n"
        "    note: wrong column\n"
        "    reviewer: cy\n"
    )
    run = tmp_path / "run"
    run.mkdir()
    # what the runner records of a `run --review FILE` (run.json's `review`, `started_at`)
    (run / "run.json").write_text(json.dumps(
        {"started_at": "2026-11-01T09:00:00+00:00", "review": {"file": str(review_file)}}
    ))  # fmt: skip
    add_gold(run, "ok-count", "SELECT 2", note="wrong table", reviewer="bo")  # also applied
    add_gold(run, "ok-max", "SELECT 4", note="needs max", reviewer="dee")  # only proposed
    out = tmp_path / "applied.yaml"
    result = _invoke("--from-review", str(run / "review.json"), "--out", str(out))
    assert result.exit_code == 0, result.output
    entries = {e.case_id: e for e in load_overlay(out).entries}
    assert set(entries) == {"ok-count", "ok-sum", "ok-max"}
    assert not entries["ok-count"].proposed and entries["ok-count"].reviewer == "bo"
    assert entries["ok-count"].at == "2026-11-01T09:00:00+00:00"  # when the run applied it
    assert entries["ok-sum"].gold is not None and entries["ok-sum"].gold.database == "shop"
    assert entries["ok-max"].proposed and entries["ok-max"].reviewer == "dee"
    assert set(load_overlay(out).applied) == {"ok-count", "ok-sum"}
    # a review file given directly: what `run --review` applies, so accepted
    out2 = tmp_path / "direct.yaml"
    assert _invoke("--from-review", str(review_file), "--out", str(out2)).exit_code == 0
    assert set(load_overlay(out2).applied) == {"ok-count", "ok-sum"}


def test_unknown_case_or_missing_out_is_exit_2(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, kql=False, only={"ok-count"})
    run = tmp_path / "run"
    run.mkdir()
    add_gold(run, "no-such-case", "SELECT 1", note="n", reviewer="r")
    out = tmp_path / "o.yaml"
    result = _invoke(str(suite), "--from-review", str(run), "--out", str(out))
    assert result.exit_code == 2 and "no-such-case" in result.output
    assert not out.exists()
    assert _invoke("--from-review", str(run)).exit_code == 2
    assert _invoke("--from-review", str(tmp_path / "nope"), "--out", str(out)).exit_code == 2
