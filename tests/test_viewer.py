"""`queryeval view`: the index against the log's own reader and `stats.compare_records`, the
cases filters against a plain filter of the records, bad runs (killed mid-write, an older
version, a corrupt line) shown with what could not be read, reviews (stored in review.json
as the runner writes it, safe beside a run appending), the token beyond loopback, and the
history's trends per suite. Runs are written with the real log writer (bench/bench_viewer.py).
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from queryeval.log import REVIEW, RUN, LogWriter, read_log
from queryeval.stats import compare_records
from queryeval.viewer import (
    CaseFilter,
    RunIndex,
    Viewer,
    cases_page,
    compare_dirs,
    compare_indexed,
    run_id,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_viewer import make_run, write_cases

N = 300


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("viewer")
    cases = write_cases(root / "cases.jsonl", N)
    runs = root / "runs"
    make_run(runs / "suite-a" / "r1", cases, N, systems=("base", "tuned"), seed=1,
             accuracy=0.5, when="2026-11-01T00:00:00+00:00")  # fmt: skip
    make_run(runs / "suite-a" / "r2", cases, N, systems=("base", "tuned"), seed=2,
             accuracy=0.7, when="2026-11-02T00:00:00+00:00")  # fmt: skip
    # another suite whose system has the same name: never one trend line with suite-a
    make_run(runs / "other" / "r3", cases, 40, systems=("base",), suite="other", seed=3)
    return root


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("index")


def _records(run: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]


# --- the index against the log's reader ---------------------------------------------------


def test_comparison_from_the_index_is_compare_records(folder: Path, index_root: Path) -> None:
    a, b = folder / "runs/suite-a/r1", folder / "runs/suite-a/r2"
    expected = compare_records(read_log(a).records, read_log(b).records, label_a="A", label_b="B")
    ia, ib = RunIndex(a, index_root), RunIndex(b, index_root)
    ia.refresh(), ib.refresh()
    got = compare_indexed(ia, ib)
    assert got.as_dict() == expected.as_dict()
    assert {m.metric for m in got.systems[0].metrics} >= {"pass", "results_f1"}
    assert got.systems[0].fixed and got.systems[0].broken  # both directions happen


def test_comparison_with_a_review_missing_cases_and_a_resumed_duplicate(
    tmp_path: Path, index_root: Path
) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 60)
    a = make_run(tmp_path / "a", cases, 60, systems=("s",), seed=5)
    b = make_run(tmp_path / "b", cases, 50, systems=("s",), seed=6)  # 10 cases only in A
    writer = LogWriter(b)  # a retried case: written again, the last record counts
    writer.open_for_append()
    again = dict(_records(b)[3], passed=not _records(b)[3]["passed"])
    writer.append(again)
    writer.close()
    from queryeval.viewer import add_override

    record = _records(b)[7]
    add_override(b, record, scorer="execution_match", verdict=not record["passed"],
                 note="judge was wrong", reviewer="ana")  # fmt: skip
    expected = compare_records(read_log(a).records, read_log(b).records)
    got = compare_dirs(a, b, root=index_root)
    data, want = got.as_dict(), expected.as_dict()
    data["run_a"], data["run_b"] = want["run_a"], want["run_b"]
    assert data == want
    assert len(got.systems[0].only_a) == 10


def test_cases_filters_are_a_plain_filter_of_the_records(folder: Path, index_root: Path) -> None:
    run = folder / "runs/suite-a/r1"
    index = RunIndex(run, index_root)
    index.refresh()
    records = _records(run)
    cases = {
        c["id"]: c for c in map(orjson.loads, (folder / "cases.jsonl").read_bytes().splitlines())
    }

    def status(r: dict[str, Any]) -> str:
        return "pass" if r["passed"] else "fail"

    def f1(r: dict[str, Any]) -> float:
        return r["scores"]["results_f1"]["value"]

    want = [
        r for r in records
        if r["system"] == "tuned" and status(r) == "fail" and "hard" in cases[r["case_id"]]["tags"]
        and 0.2 <= f1(r) <= 0.6 and "orders" in cases[r["case_id"]]["conversation"][0]["content"]
    ]  # fmt: skip
    page = cases_page(
        index, None,
        CaseFilter(system="tuned", status="fail", tag="hard", scorer="results_f1", min_score=0.2,
                   max_score=0.6, text="ORDERS", sort="score", desc=True, limit=5),
    )  # fmt: skip
    assert page["total"] == len(want) > 5
    assert [r["score"] for r in page["rows"]] == sorted((f1(r) for r in want), reverse=True)[:5]
    # reasons: the records' failure reasons (words of the report); pages don't overlap
    reason = cases_page(index, None, CaseFilter(reason="timeout", limit=500))
    assert reason["total"] == sum(
        1 for r in records
        if (r["scores"]["execution_match"].get("details") or {}).get("failure") == "timeout"
    )  # fmt: skip
    past = cases_page(index, None, CaseFilter(reason="timeout", offset=10 * N))
    assert past["rows"] == [] and past["total"] == reason["total"]
    first = cases_page(index, None, CaseFilter(limit=50))
    second = cases_page(index, None, CaseFilter(limit=50, offset=50))
    assert first["total"] == 2 * N
    assert not {(r["system"], r["case_id"]) for r in first["rows"]} & {
        (r["system"], r["case_id"]) for r in second["rows"]
    }


def test_the_index_follows_the_file(tmp_path: Path, index_root: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 20)
    run = make_run(tmp_path / "run", cases, 10, seed=1)
    index = RunIndex(run, index_root)
    assert index.refresh().rows == 10
    more = make_run(tmp_path / "more", cases, 20, seed=2)
    writer = LogWriter(run)  # a resumed run appends: indexed from where the index stopped
    writer.open_for_append()
    writer.write_lines(
        b"".join(line + b"\n" for line in (more / "results.jsonl").read_bytes().splitlines()[10:])
    )
    writer.close()
    state = RunIndex(run, index_root).refresh()  # a new process reads the index's meta
    assert (state.rows, len(state.parts)) == (20, 2)
    LogWriter(run).rewrite(_records(run)[:5])  # `--retry-errors` replaces the file
    assert RunIndex(run, index_root).refresh().rows == 5
    assert RunIndex(run, index_root).record("baseline", "c000004")["case_id"] == "c000004"


# --- the server ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def viewer(folder: Path, index_root: Path) -> Iterator[Viewer]:
    bad = folder / "runs" / "bad"
    cases = folder / "cases.jsonl"
    # killed mid-write: no summary, run.json says running, the last line torn
    killed = make_run(bad / "killed", cases, 30, seed=7, summary=False)
    info = json.loads((killed / RUN).read_text())
    (killed / RUN).write_text(json.dumps({**info, "status": "running", "finished_at": None}))
    with (killed / "results.jsonl").open("ab") as f:
        f.write(b'{"system":"baseline","case_id":"c000030","out')
    # a corrupt line in the middle
    corrupt = make_run(bad / "corrupt", cases, 30, seed=8)
    lines = (corrupt / "results.jsonl").read_bytes().splitlines(keepends=True)
    lines[4] = b'{"system": "baseline", "case_id": oops}\n'
    (corrupt / "results.jsonl").write_bytes(b"".join(lines))
    # an older version's run: no run.json at all
    old = make_run(bad / "old", cases, 30, seed=9)
    (old / RUN).unlink()
    v = Viewer([folder / "runs"], index_root=index_root, background_index=False).start()
    yield v
    v.stop()


def _api(v: Viewer, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"http://127.0.0.1:{v.port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers=headers,
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_runs_grouped_by_suite_with_trends_per_suite(viewer: Viewer, folder: Path) -> None:
    status, data = _api(viewer, "/api/runs")
    assert status == 200
    names = {r["name"] for r in data["runs"]}
    assert {"suite-a/r1", "suite-a/r2", "other/r3", "bad/killed", "bad/corrupt", "bad/old"} <= names
    groups = {g["suite"]: g["runs"] for g in data["groups"]}
    assert len(groups["bench"]) == 2 + 3  # r1, r2 and the bad runs (suite bench)
    trend = {t["suite"]: t for t in data["trends"]}
    assert [p["run"] for p in trend["other"]["series"]["base"]] == [
        run_id(folder / "runs/other/r3")
    ]
    r1 = next(r for r in data["runs"] if r["name"] == "suite-a/r1")
    stored = json.loads((folder / "runs/suite-a/r1/summary.json").read_text())
    assert r1["systems"][0]["pass_rate"] == stored["systems"]["base"]["pass_rate"]
    assert r1["systems"][0]["ci"] == stored["systems"]["base"]["pass_rate_ci95"]


def test_bad_runs_show_what_can_be_read(viewer: Viewer, folder: Path) -> None:
    _, data = _api(viewer, "/api/runs")
    ids = {r["name"]: r["id"] for r in data["runs"]}
    status, killed = _api(viewer, f"/api/runs/{ids['bad/killed']}")
    assert status == 200
    text = " ".join(killed["problems"])
    assert "no summary.json" in text and "killed mid-write" in text
    assert killed["counted"][0]["cases"] == 30  # figures counted from what was stored
    status, corrupt = _api(viewer, f"/api/runs/{ids['bad/corrupt']}")
    assert status == 200 and "1 line(s) of results.jsonl are not records" in " ".join(
        corrupt["problems"]
    ) and "first: 5" in " ".join(corrupt["problems"])  # fmt: skip
    _, page = _api(viewer, f"/api/runs/{ids['bad/corrupt']}/cases?limit=100")
    assert page["total"] == 29
    status, old = _api(viewer, f"/api/runs/{ids['bad/old']}")
    assert status == 200 and "no run.json" in " ".join(old["problems"])
    assert "questions and golds are not shown" in " ".join(old["problems"])
    # bad requests: a 400 naming what was wrong, never a stack trace
    status, error = _api(viewer, f"/api/runs/{ids['bad/old']}/cases?sort=nonsense")
    assert status == 400 and error["error"].startswith("sort: sort must be one of")
    status, error = _api(viewer, "/api/runs/0123/case?system=x&case_id=y")
    assert status == 400 and "no run with id" in error["error"]


def test_case_page_and_side_by_side(viewer: Viewer, folder: Path) -> None:
    rid = run_id(folder / "runs/suite-a/r1")
    _, page = _api(viewer, f"/api/runs/{rid}/cases?status=fail&system=base&limit=1")
    row = page["rows"][0]
    _, case = _api(viewer, f"/api/runs/{rid}/case?system=base&case_id={row['case_id']}")
    assert case["question"].startswith("How many") and case["gold"].startswith("SELECT count(*)")
    assert ["-", str(int(case["gold"][-1]))] in case["diff"]  # the wrong status value
    assert case["tokens"]["in"] > 0 and len(case["attempts"]) == 1
    r2 = run_id(folder / "runs/suite-a/r2")
    _, both = _api(viewer, f"/api/compare?a={rid}&b={r2}&system_a=tuned&system_b=tuned&limit=400")
    expected = compare_records(
        read_log(folder / "runs/suite-a/r1").records, read_log(folder / "runs/suite-a/r2").records,
        systems=[("tuned", "tuned")],
    ).as_dict()  # fmt: skip
    pair = both["comparison"]["systems"][0]
    assert pair["metrics"] == expected["systems"][0]["metrics"]
    flips = len(expected["systems"][0]["fixed"]) + len(expected["systems"][0]["broken"])
    rows = both["rows"]["rows"]
    assert both["rows"]["flipped"] == flips
    assert all(r["flipped"] for r in rows[:flips]) and not any(r["flipped"] for r in rows[flips:])


def test_a_slow_request_does_not_hold_up_the_others(
    viewer: Viewer, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comparison held inside its (blocking) work while the runs page and a filtered
    cases page are asked for: both are answered before the comparison is let go."""
    from queryeval.viewer import _app

    real = _app.compare_indexed
    entered, release = threading.Event(), threading.Event()
    released: list[bool] = []

    def held(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        released.append(release.wait(timeout=10))  # False: nothing else was answered
        return real(*args, **kwargs)

    monkeypatch.setattr(_app, "compare_indexed", held)
    r1, r2 = run_id(folder / "runs/suite-a/r1"), run_id(folder / "runs/suite-a/r2")
    slow: list[tuple[int, Any]] = []
    thread = threading.Thread(
        target=lambda: slow.append(_api(viewer, f"/api/compare?a={r1}&b={r2}"))
    )
    thread.start()
    assert entered.wait(timeout=10)
    runs = _api(viewer, "/api/runs")
    cases = _api(viewer, f"/api/runs/{r1}/cases?status=fail&limit=5")
    release.set()
    thread.join(timeout=30)
    assert runs[0] == 200 and len(runs[1]["runs"]) >= 3
    assert cases[0] == 200 and cases[1]["total"] > 0
    assert released == [True]  # the comparison was still held when both were answered
    assert slow[0][0] == 200 and slow[0][1]["comparison"]["systems"]


def test_two_systems_of_one_run(viewer: Viewer, folder: Path) -> None:
    rid = run_id(folder / "runs/suite-a/r1")
    _, both = _api(viewer, f"/api/compare?a={rid}&b={rid}")
    pair = both["comparison"]["systems"]
    assert [(p["system_a"], p["system_b"]) for p in pair] == [("base", "tuned")]
    records = read_log(folder / "runs/suite-a/r1").records
    expected = compare_records(records, records, systems=[("base", "tuned")]).as_dict()
    assert pair[0]["metrics"] == expected["systems"][0]["metrics"]


def test_review_updates_figures_and_survives_a_resuming_run(viewer: Viewer, folder: Path) -> None:
    run = folder / "runs/suite-a/r2"
    rid = run_id(run)
    _, before = _api(viewer, f"/api/runs/{rid}")
    _, page = _api(viewer, f"/api/runs/{rid}/cases?status=fail&system=base&limit=20")
    writer = LogWriter(run)  # a run resuming: appending records while reviews are written
    writer.open_for_append()
    extra = [dict(r, case_id=f"x{i}") for i, r in enumerate(_records(run)[:40])]

    def append() -> None:
        for record in extra:
            writer.append(record)

    appender = threading.Thread(target=append)
    appender.start()
    for row in page["rows"][:10]:
        status, _ = _api(viewer, f"/api/runs/{rid}/review", {
            "system": "base", "case_id": row["case_id"], "scorer": "execution_match",
            "verdict": "pass", "note": "equivalent query", "reviewer": "ana"})  # fmt: skip
        assert status == 200
    appender.join()
    writer.close()
    status, _ = _api(viewer, f"/api/runs/{rid}/review", {"kind": "gold", "case_id": "c000001",
                     "gold": "SELECT 1", "note": "typo", "reviewer": "bo"})  # fmt: skip
    assert status == 200
    status, error = _api(viewer, f"/api/runs/{rid}/review", {
        "system": "base", "case_id": "c000001", "scorer": "execution_match", "verdict": "pass",
        "note": "", "reviewer": "x"})  # fmt: skip
    assert status == 400 and "reason is required" in error["error"]
    # neither lost: every appended record and every override
    assert len(_records(run)) == 2 * N + 40
    review = json.loads((run / REVIEW).read_text())
    assert len(review["records"]) == 10 and review["golds"][0]["reviewer"] == "bo"
    assert all(r["scores"]["execution_match"]["details"]["review"]["at"] for r in review["records"])
    # the log's reader puts them over the records (the runner's format)
    log = read_log(run)
    reviewed = {r["case_id"]: r for r in log.records if r["system"] == "base"}
    assert all(reviewed[row["case_id"]]["passed"] for row in page["rows"][:10])
    _, after = _api(viewer, f"/api/runs/{rid}")
    base_before = next(s for s in (before["counted"] or before["systems"]) if s["name"] == "base")
    base = next(s for s in after["counted"] if s["name"] == "base")
    assert base["overrides"] == 10 and base["passed"] == base_before["passed"] + 10 + sum(
        1 for r in extra if r["system"] == "base" and r["passed"]
    )  # fmt: skip
    _, reviewed_page = _api(viewer, f"/api/runs/{rid}/cases?reviewed=1&limit=50")
    assert reviewed_page["total"] == 10 and all(
        r["status"] == "pass" for r in reviewed_page["rows"]
    )
    _, file = _api(viewer, f"/api/runs/{rid}/review")
    assert len(file["file"]["overrides"]) == 10 and file["file"]["golds"][0]["gold"] == "SELECT 1"


def test_beyond_loopback_a_token_is_needed(folder: Path, index_root: Path) -> None:
    v = Viewer([folder / "runs/other"], host="0.0.0.0", index_root=index_root,
               background_index=False).start()  # fmt: skip
    try:
        assert v.token and v.url.endswith(f"?token={v.token}")
        status, _ = _api(v, "/api/runs")
        assert status == 403
        status, data = _api(v, "/api/runs", token=v.token)
        assert status == 200 and len(data["runs"]) == 1
    finally:
        v.stop()


def test_history_trends_never_join_suites(folder: Path, index_root: Path) -> None:
    from queryeval.reports import history_context
    from queryeval.viewer import index_diff

    runs = [folder / "runs/suite-a/r1", folder / "runs/suite-a/r2", folder / "runs/other/r3"]
    ctx = history_context(runs, diff=index_diff(index_root))
    charts = {t["metric"]: t for t in ctx["trends"]}
    assert "bench: pass_rate" in charts and "other: pass_rate" in charts
    assert "r3" not in str(charts["bench: pass_rate"]["svg"])
    assert "r1" not in str(charts["other: pass_rate"]["svg"])
    order = [Path(r["path"]) for r in ctx["runs"]]
    pair = (order.index(runs[0]), order.index(runs[1]))
    same = next(d for d in ctx["diffs"] if (d["a"], d["b"]) == pair)
    expected = compare_records(read_log(runs[0]).records, read_log(runs[1]).records).as_dict()
    assert same["systems"][0]["metrics"] == expected["systems"][0]["metrics"]


def test_cli_refuses_what_is_not_a_folder(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from queryeval.cli._app import app

    result = CliRunner().invoke(app, ["view", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "not a folder" in result.output


def test_case_view_shows_rationale_counterexample_and_tables(tmp_path: Path) -> None:
    from queryeval.viewer import Catalog, case_view

    cases = write_cases(tmp_path / "cases.jsonl", 3)
    run = make_run(tmp_path / "runs" / "r", cases, 2, seed=1)
    writer = LogWriter(run)
    writer.open_for_append()
    writer.append({
        "system": "baseline", "case_id": "c000002", "passed": False, "error": None,
        "latency_s": 1.5, "cost": 0.002,
        "output": {"attempts": [
            {"query": "SELECT 1", "tokens_in": 10, "tokens_out": 2},
            {"query": "SELECT count(*) FROM orders", "tokens_in": 20, "tokens_out": 3}],
            "metadata": {"refine": "attempt 1 failed: no such table"}},
        "scores": {
            "judge": {"value": 0.0, "status": "ok", "passed": False,
                      "details": {"reasoning": "counts the wrong table"}},
            "verified": {"value": 0.0, "status": "ok", "passed": False, "details": {
                "counterexample": {"database": "d1", "gold": [[3]], "predicted": [[4]]},
                "result": {"columns": ["n"], "rows": [[4]]}}},
        },
    })  # fmt: skip
    writer.close()
    catalog = Catalog([tmp_path / "runs"], tmp_path / "index")
    view = case_view(catalog.get(catalog.runs()[0].id), "baseline", "c000002")
    assert view["rationale"] == {"judge": "counts the wrong table"}
    assert view["counterexamples"][0]["value"]["predicted"] == [[4]]
    assert view["tables"][0]["columns"] == ["n"] and view["tables"][0]["rows"] == [[4]]
    assert view["tokens"] == {"in": 30, "out": 5} and len(view["attempts"]) == 2
    assert view["prediction"] == "SELECT count(*) FROM orders"
    assert view["metadata"] == {"refine": "attempt 1 failed: no such table"}
    assert view["question"].startswith("How many") and view["gold"].startswith("SELECT")


def test_report_says_when_the_viewers_overrides_are_not_applied(tmp_path: Path) -> None:
    from queryeval.cli._report import _viewer_overrides_note
    from queryeval.viewer._review import add_override

    run = make_run(tmp_path / "run", write_cases(tmp_path / "cases.jsonl", 5), 5)
    assert _viewer_overrides_note(run, None) is None  # no review.json
    record = _records(run)[0]
    add_override(run, record, scorer="execution_match", verdict=not record["passed"],
                 note="gold is wrong", reviewer="ann")  # fmt: skip
    note = _viewer_overrides_note(run, None)
    assert note is not None and "1 verdict override(s)" in note and "leave them out" in note
    assert f"queryeval report {run} --review FILE" in note
    replaced = _viewer_overrides_note(run, tmp_path / "review.yaml")
    assert replaced is not None and "REPLACING" in replaced


def test_run_writes_the_index_at_its_end_and_a_failure_to_only_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`queryeval run` leaves a large run's index ready (view, compare and history read it
    without building it); a small run's is left to its first reader; an index folder that
    cannot be written changes nothing of the run but a warning."""
    from typer.testing import CliRunner

    from queryeval.cli import app
    from queryeval.viewer import _index, index_run
    from test_runner import make_answer_suite

    suite = make_answer_suite(tmp_path / "s", 8)
    root = tmp_path / "index"
    monkeypatch.setenv("QUERYEVAL_INDEX_DIR", str(root))
    monkeypatch.setattr(_index, "INDEX_AT_END_MIN_BYTES", 1_000)  # these 8 records: ~3 KB
    done = CliRunner().invoke(app, ["run", str(suite), "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.stderr
    assert "warning" not in done.stderr
    index = RunIndex(tmp_path / "r", root)
    meta = orjson.loads((index.folder / "meta.json").read_bytes())  # written by the run
    assert meta["rows"] == 8 and meta["systems"] == ["saved"] and meta["has_cases"]
    index.state = index._load_state()  # read as it is, not built again
    assert index_run(tmp_path / "r", tmp_path / "elsewhere", min_bytes=10**9) is None
    assert not (tmp_path / "elsewhere").exists()  # a smaller run is left to its first reader
    page = cases_page(index, None, CaseFilter(status="fail"))
    assert sorted(r["case_id"] for r in page["rows"]) == ["c-0", "c-4"]
    # an index folder that is a file: the run is the same, with a warning
    (tmp_path / "blocked").write_text("not a folder")
    monkeypatch.setenv("QUERYEVAL_INDEX_DIR", str(tmp_path / "blocked"))
    warned = CliRunner().invoke(app, ["run", str(suite), "--out", str(tmp_path / "w")])
    assert warned.exit_code == 0, warned.stderr
    assert "warning: the run's index (for view, compare, history): cannot write" in warned.stderr
    assert "run directory:" in warned.stdout

    def verdicts(run: Path) -> list[tuple[str, bool]]:
        return [(r["case_id"], r["passed"]) for r in _records(run)]

    assert verdicts(tmp_path / "w") == verdicts(tmp_path / "r")
    assert (tmp_path / "w" / "summary.json").exists()


def test_results_replaced_during_a_read_never_end_a_page_in_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """results.jsonl replaced (`run --retry-errors`, `--overwrite`) and indexed by another
    process between a request's index refresh and its queries, once or twice: every page
    answers (from the index as it was, or as it is now), and what cannot be read at all is
    said beside what can."""
    from queryeval.viewer import _app, _index

    monkeypatch.setattr(_index, "PART_ROWS", 10)  # several Parquet parts, fewer after
    cases = write_cases(tmp_path / "cases.jsonl", 40)
    run = make_run(tmp_path / "runs" / "r", cases, 20, seed=12)  # 40 records: 4 parts
    root = tmp_path / "index"
    records = _records(run)
    kept = records[:15]

    def replace_first(real: Any, times: int) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            nonlocal times
            for _ in range(times):  # before the request's first question only
                LogWriter(run).rewrite(kept[::-1] if len(_records(run)) == 15 else kept)
                RunIndex(run, root).refresh()  # another process indexes it
            times = 0
            return real(*args, **kwargs)

        return wrapper

    def failing(some: list[dict[str, Any]]) -> int:
        return sum(1 for r in some if not r["passed"])

    v = Viewer([tmp_path / "runs"], index_root=root, background_index=False).start()
    try:
        rid = run_id(run)
        for times, total in ((1, failing(records)), (2, failing(kept))):
            # once: the index as it was is still there; twice: it is read again as it is now
            LogWriter(run).rewrite(records)
            assert _api(v, f"/api/runs/{rid}")[0] == 200  # indexed as it was
            monkeypatch.setattr(_app, "cases_page", replace_first(_app.cases_page, times))
            status, page = _api(v, f"/api/runs/{rid}/cases?status=fail&limit=500")
            monkeypatch.undo()
            monkeypatch.setattr(_index, "PART_ROWS", 10)
            assert (status, page["total"], page["problems"]) == (200, total, []), page
            # a case read at its place in a file that was replaced since
            LogWriter(run).rewrite(records)
            assert _api(v, f"/api/runs/{rid}")[0] == 200
            monkeypatch.setattr(_app, "case_view", replace_first(_app.case_view, times))
            status, case = _api(v, f"/api/runs/{rid}/case?system=baseline&case_id=c000003")
            monkeypatch.undo()
            monkeypatch.setattr(_index, "PART_ROWS", 10)
            assert status == 200 and case["problems"] == [], case
            want = next(
                r for r in records if (r["system"], r["case_id"]) == ("baseline", "c000003")
            )
            assert (case["case_id"], case["passed"]) == ("c000003", want["passed"])

        # what cannot be read even from an index brought up to date is said, never a 500
        def gone(*args: Any, **kwargs: Any) -> Any:
            raise OSError("a part of the index is gone")

        for name in ("cases_page", "facets", "verdicts", "compare_indexed"):
            monkeypatch.setattr(_app, name, gone)
        monkeypatch.setattr(RunIndex, "record", gone)
        status, page = _api(v, f"/api/runs/{rid}/cases?status=fail")
        assert (status, page["rows"]) == (200, []) and "the cases could not be read (OSError: a " \
            "part of the index is gone): reload the page" in page["problems"]  # fmt: skip
        status, data = _api(v, f"/api/runs/{rid}")
        assert status == 200 and data["sections"]  # the summary's figures are still shown
        assert any("failure reasons could not be read" in p for p in data["problems"])
        status, case = _api(v, f"/api/runs/{rid}/case?system=baseline&case_id=c000003")
        assert status == 200 and "the record could not be read" in case["problems"][0]
        status, both = _api(v, f"/api/compare?a={rid}&b={rid}")
        assert status == 200 and both["comparison"] is None and both["problems"]
        status, error = _api(v, f"/api/runs/{rid}/review", {
            "system": "baseline", "case_id": "c000003", "scorer": "execution_match",
            "verdict": "pass", "note": "x", "reviewer": "y"})  # fmt: skip
        assert status == 400 and "nothing was written" in error["error"]
        assert not (run / REVIEW).exists()
    finally:
        v.stop()


def test_a_reviewed_run_never_shows_an_unreviewed_figure_as_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reviewed run's figures are counted with the review's overrides; where the records'
    verdicts cannot be read, summary.json's figures are marked not reviewed (with the
    problem), never passed off as the run's."""
    from queryeval.viewer import _app
    from queryeval.viewer._catalog import Catalog
    from queryeval.viewer._review import add_override

    run = make_run(tmp_path / "runs" / "r", write_cases(tmp_path / "cases.jsonl", 6), 6)
    failing = next(r for r in _records(run) if not r["passed"])
    add_override(run, failing, scorer="execution_match", verdict=True, note="gold is wrong",
                 reviewer="ann")  # fmt: skip
    catalog = Catalog([tmp_path / "runs"], tmp_path / "index")
    view = _app.run_view(catalog.get(run_id(run)))
    assert view["figures_reviewed"] is True and view["counted"]
    assert all(s["before_review"] for s in view["systems"])  # summary.json's: before it

    def gone(*args: Any, **kwargs: Any) -> Any:
        raise OSError("a part of the index is gone")

    monkeypatch.setattr(_app, "verdicts", gone)
    view = _app.run_view(catalog.get(run_id(run)))
    assert view["counted"] is None and view["figures_reviewed"] is False
    assert any(p.startswith("NOT REVIEWED: the review's 1 override(s)") for p in view["problems"])
    assert all(s["before_review"] for s in view["systems"])


def test_a_resumed_run_keeps_the_reviews_written_in_the_viewer(tmp_path: Path) -> None:
    """`run --resume` of a run reviewed in the viewer keeps review.json (it reviews these
    records) and reports the stored scores, as `report` without --review does; a new run
    into the folder (--overwrite) starts without it."""
    from typer.testing import CliRunner

    from queryeval.cli import app
    from queryeval.viewer._review import add_override
    from test_runner import make_answer_suite

    suite, out = make_answer_suite(tmp_path / "s", 6), tmp_path / "r"
    first = CliRunner().invoke(app, ["run", str(suite), "--out", str(out), "--limit", "4"])
    assert first.exit_code == 0, first.stderr
    record = _records(out)[0]
    add_override(out, record, scorer=next(iter(record["scores"])), verdict=not record["passed"],
                 note="gold is wrong", reviewer="ann")  # fmt: skip
    resumed = CliRunner().invoke(app, ["run", str(suite), "--out", str(out), "--resume"])
    assert resumed.exit_code == 0, resumed.stderr
    assert len(_records(out)) == 6
    review = json.loads((out / REVIEW).read_text())
    assert [(e["case_id"], e["passed"]) for e in review["records"]] == [
        (record["case_id"], not record["passed"])
    ]
    stored = json.loads((out / "summary.json").read_text())
    assert "review" not in stored  # the figures are the stored scores
    again = CliRunner().invoke(app, ["run", str(suite), "--out", str(out), "--overwrite"])
    assert again.exit_code == 0, again.stderr
    assert not (out / REVIEW).exists()
