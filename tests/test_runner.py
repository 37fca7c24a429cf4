"""The runner end to end: records, summary, resume after SIGKILL, systems, errors, gates."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.errors import InputError
from queryeval.metrics import term_selection
from queryeval.runner import load_suite, run_suite

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def make_answer_suite(
    folder: Path,
    n: int,
    *,
    scorers: str = "  - test_slow_echo\n",
    systems: str | None = None,
    extra: str = "",
) -> Path:
    """n answer cases; the predictions are right except every 4th."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w") as f:
        for i in range(n):
            case = {
                "id": f"c-{i}",
                "tags": ["even" if i % 2 == 0 else "odd"],
                "conversation": [{"content": f"q{i}", "target": {"answer": f"a{i}"}}],
            }
            f.write(json.dumps(case) + "\n")
    with (folder / "preds.jsonl").open("w") as f:
        for i in range(n):
            answer = f"a{i}" if i % 4 else "nope"
            f.write(
                json.dumps({"case_id": f"c-{i}", "answer": answer, "latency_s": i / 1000}) + "\n"
            )
    shutil.copy(HERE / "runner_plugin.py", folder / "runner_plugin.py")
    systems = systems or "  - {name: saved, predictions: preds.jsonl}\n"
    (folder / "suite.yaml").write_text(
        "name: t\ncases: cases.jsonl\nplugins: [runner_plugin]\n"
        f"systems:\n{systems}scorers:\n{scorers}reports: [json]\n{extra}"
    )
    return folder / "suite.yaml"


def read_records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def test_sdmx_example_run_matches_the_metric(tmp_path: Path) -> None:
    suite = load_suite(ROOT / "examples" / "sdmx" / "suite.yaml")
    result = run_suite(suite, tmp_path / "run", progress=False)
    records = read_records(tmp_path / "run")
    assert len(records) == 2 * 16
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {
        "results.jsonl",
        "summary.json",
        "run.json",
        "report.xlsx",
    }
    from queryeval.cases import load_cases
    from queryeval.systems import PredictionsFile

    cases = {c.id: c for c in load_cases(suite.cases, suite.base_dir)}
    preds = PredictionsFile(suite.resolve("predictions/baseline.jsonl"))
    recalls = []
    for case_id, case in cases.items():
        out = preds.get(case_id)
        sel = out.final.indicator_selection if out.final else []
        assert case.target is not None
        recalls.append(term_selection(sel, case.target.indicator_selection).macro_recall)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    got = summary["systems"]["baseline"]["scorers"]["term_selection"]["metrics"]["macro_recall"]
    assert got["mean"] == pytest.approx(sum(recalls) / len(recalls))
    assert got["n"] == 16
    dq = summary["systems"]["baseline"]["scorers"]["term_selection"]["aggregate"]
    assert dq["data_query_metrics"]["macro_recall"] == pytest.approx(got["mean"])
    assert set(dq["per_dimension"]) >= {"INDICATOR", "COUNTRY"}
    # the failed system case is recorded and counted, not dropped
    failed = [r for r in records if r["system"] == "baseline" and r["error"]]
    assert len(failed) == 1 and failed[0]["passed"] is False
    # the hallucinated code is flagged by the codelist check
    unknown = [r for r in records if r["scores"]["term_selection"]["details"].get("unknown_codes")]
    assert {
        u["id"] for r in unknown for u in r["scores"]["term_selection"]["details"]["unknown_codes"]
    } == {"NGDP_RPCH_X"}
    run_info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_info["status"] == "complete" and len(run_info["config_hash"]) == 64
    assert run_info["scorers"]["term_selection"]["options"]["match_on"] == "id"
    assert result.gates_passed


def test_summary_counts_unscored_and_errors_apart(tmp_path: Path) -> None:
    suite_path = make_answer_suite(
        tmp_path / "s",
        10,
        scorers="  - test_slow_echo\n  - test_half_unscored\n  - test_explodes\n",
        extra="settings: {max_scorer_error_share: 0.1}\n",  # one bug in 10 is tolerated
    )
    run_suite(load_suite(suite_path), tmp_path / "run", progress=False)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())["systems"]["saved"]
    half = summary["scorers"]["test_half_unscored"]
    # never averaged in as 0; half unscored is above max_unscored_share: no mean, only the
    # mean of what was scored and the bounds the whole mean lies in
    assert (half["ok"], half["unscored"], half["mean"], half["flagged"]) == (5, 5, None, True)
    assert (half["mean_scored"], half["bounds"], half["pass_rate"]) == (1.0, [0.5, 1.0], None)
    boom = summary["scorers"]["test_explodes"]
    assert (boom["ok"], boom["error"], boom["mean"], boom["mean_scored"]) == (9, 1, None, 0.5)
    assert any("scorer bug" in reason for reason in boom["not_scored_reasons"])
    echo = summary["scorers"]["test_slow_echo"]
    assert echo["mean"] == pytest.approx(7 / 10)  # cases 0, 4, 8 are wrong
    assert summary["passed"] + summary["failed"] + summary["no_verdict"] == 10
    assert summary["by_tag"]["even"]["cases"] == 5


def test_a_scorer_raising_on_more_than_its_share_stops_the_run(tmp_path: Path) -> None:
    """One raise in 10 cases is above the default 5%: a scorer bug is not a score (exit 2,
    with the scorer and its first message); the records made so far are kept."""
    suite_path = make_answer_suite(tmp_path / "s", 10, scorers="  - test_explodes\n")
    with pytest.raises(InputError, match=r"scorers\.test_explodes.*raised on 1 of 10.*scorer bug"):
        run_suite(load_suite(suite_path), tmp_path / "run", progress=False)
    assert read_records(tmp_path / "run")
    done = _cli("run", str(suite_path), "--out", str(tmp_path / "run2"), cwd=tmp_path)
    assert done.returncode == 2 and "a scorer bug is not a score" in done.stderr


def test_refuses_to_overwrite_without_flag_and_resume_skips(tmp_path: Path) -> None:
    suite = load_suite(make_answer_suite(tmp_path / "s", 6))
    first = run_suite(suite, tmp_path / "run", progress=False)
    assert first.new_records == 6
    with pytest.raises(InputError, match="--resume"):
        run_suite(suite, tmp_path / "run", progress=False)
    again = run_suite(suite, tmp_path / "run", resume=True, progress=False)
    assert (again.new_records, again.skipped) == (0, 6)
    assert len(read_records(tmp_path / "run")) == 6


def test_resume_refuses_changed_inputs(tmp_path: Path) -> None:
    suite_path = make_answer_suite(tmp_path / "s", 4)
    run_suite(load_suite(suite_path), tmp_path / "run", progress=False)
    preds = tmp_path / "s" / "preds.jsonl"
    preds.write_text(preds.read_text().replace('"answer": "a1"', '"answer": "more"'))
    with pytest.raises(InputError, match="changed since this run began"):
        run_suite(load_suite(suite_path), tmp_path / "run", resume=True, progress=False)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "queryeval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_sigkill_then_resume_gives_identical_summary(tmp_path: Path) -> None:
    n = 2000
    suite_path = make_answer_suite(
        tmp_path / "s", n, scorers="  - {name: test_slow_echo, options: {sleep_s: 0.002}}\n"
    )
    # an uninterrupted run, for reference
    ref = _cli(
        "run", str(suite_path), "--out", str(tmp_path / "ref"), "--no-progress", cwd=tmp_path
    )
    assert ref.returncode == 0, ref.stderr
    # a run killed with SIGKILL part-way
    run_dir = tmp_path / "killed"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "queryeval",
            "run",
            str(suite_path),
            "--out",
            str(run_dir),
            "--no-progress",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results = run_dir / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if results.exists() and results.read_bytes().count(b"\n") >= n // 3:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = results.read_bytes().count(b"\n")
    assert 0 < kept < n, "the kill must land mid-run"
    assert not (run_dir / "summary.json").exists()
    resumed = _cli(
        "run", str(suite_path), "--out", str(run_dir), "--resume", "--no-progress", cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    records = read_records(run_dir)
    keys = [(r["system"], r["case_id"]) for r in records]
    assert len(keys) == n and len(set(keys)) == n  # no duplicates, nothing missing
    assert (run_dir / "summary.json").read_bytes() == (
        tmp_path / "ref" / "summary.json"
    ).read_bytes()


def test_torn_last_line_is_repaired_on_resume(tmp_path: Path) -> None:
    suite = load_suite(make_answer_suite(tmp_path / "s", 5))
    run_suite(suite, tmp_path / "run", progress=False)
    results = tmp_path / "run" / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[:3]) + lines[3][:20])  # a write cut short by SIGKILL
    again = run_suite(suite, tmp_path / "run", resume=True, progress=False)
    assert (again.new_records, again.skipped) == (2, 3)
    assert sorted(r["case_id"] for r in read_records(tmp_path / "run")) == [
        f"c-{i}" for i in range(5)
    ]


def test_callable_systems_sync_async_crash_timeout_and_concurrency(tmp_path: Path) -> None:
    import runner_plugin  # noqa: F401  (made importable by the suite's plugins)

    systems = (
        "  - {name: sync, callable: 'runner_plugin:sync_system', concurrency: 3,"
        " params: {suffix: ['', '!']}}\n"
        "  - {name: async, callable: 'runner_plugin:async_system', timeout_s: 0.5}\n"
    )
    suite_path = make_answer_suite(tmp_path / "s", 12, systems=systems)
    suite = load_suite(suite_path)
    plugin = sys.modules["runner_plugin"]
    plugin.reset()  # type: ignore[attr-defined]
    result = run_suite(suite, tmp_path / "run", progress=False)
    assert 1 < plugin.peak_concurrency() <= 3  # type: ignore[attr-defined]
    records = read_records(tmp_path / "run")
    by = {(r["system"], r["case_id"]): r for r in records}
    assert set(result.summary["systems"]) == {"sync[suffix=]", "sync[suffix=!]", "async"}
    crash = by[("sync[suffix=]", "c-7")]
    assert "model exploded" in crash["error"] and crash["passed"] is False
    assert by[("sync[suffix=]", "c-1")]["passed"] is True
    assert by[("sync[suffix=!]", "c-1")]["passed"] is False
    assert "timed out" in by[("async", "c-9")]["error"]
    assert by[("async", "c-2")]["output"]["attempts"][0]["answer"].startswith("pid ")
    assert result.summary["systems"]["sync[suffix=]"]["system_errors"] == 1


def test_cli_limits_openblas_threads_before_numpy_loads() -> None:
    """main() sets OPENBLAS_NUM_THREADS; that only works while numpy is not loaded yet."""
    code = (
        "import os, sys, queryeval.cli; loaded = 'numpy' in sys.modules;"
        "sys.argv = ['queryeval', '--help'];"
        "\ntry:\n    queryeval.cli.main()\nexcept SystemExit:\n    pass\n"
        "print(loaded, os.environ['OPENBLAS_NUM_THREADS'], file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stderr.strip() == "False 1"


def test_cli_exit_codes(tmp_path: Path) -> None:
    suite_path = make_answer_suite(tmp_path / "s", 8, extra="gates: ['pass_rate >= 0.9']\n")
    gate = _cli("run", str(suite_path), "--out", str(tmp_path / "r1"), cwd=tmp_path)
    assert gate.returncode == 1
    assert "gate failed: saved: pass_rate >= 0.9" in gate.stderr
    ok = make_answer_suite(tmp_path / "s2", 8, extra="gates: ['test_slow_echo >= 0.5']\n")
    assert _cli("run", str(ok), "--out", str(tmp_path / "r2"), cwd=tmp_path).returncode == 0
    (tmp_path / "s" / "preds.jsonl").write_text('{"case_id": "ghost", "answer": "x"}\n')
    bad = _cli("validate", str(suite_path), cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().endswith(
        "preds.jsonl:1: case_id: prediction for unknown case id 'ghost'"
    )
    assert "Traceback" not in bad.stderr
    missing = _cli("run", str(tmp_path / "none.yaml"), cwd=tmp_path)
    assert missing.returncode == 2 and "cannot read file" in missing.stderr
    (tmp_path / "s2" / "suite.yaml").write_text("name: x\ncases: [\n")
    yaml_err = _cli("validate", str(tmp_path / "s2" / "suite.yaml"), cwd=tmp_path)
    assert yaml_err.returncode == 2 and "suite.yaml:3: invalid YAML" in yaml_err.stderr


def test_report_command_rebuilds_reports(tmp_path: Path) -> None:
    suite = load_suite(ROOT / "examples" / "sdmx" / "suite.yaml")
    run_suite(suite, tmp_path / "run", progress=False)
    (tmp_path / "run" / "report.xlsx").unlink()
    before = json.loads((tmp_path / "run" / "summary.json").read_text())
    out = _cli("report", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "run" / "report.xlsx").exists()
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == before


def _sdmx_bench_suite(folder: Path, n: int, workers: int) -> Path:
    sys.path.insert(0, str(ROOT / "bench"))
    from _sdmx_data import write_suite

    suite = write_suite(folder, n)
    text = suite.read_text() + f"settings: {{workers: {workers}, shard_min_cases: 10}}\n"
    suite.write_text(text)
    return suite


def test_sharded_run_equals_serial_run(tmp_path: Path) -> None:
    from queryeval.runner._units import can_shard

    serial = load_suite(_sdmx_bench_suite(tmp_path / "a", 400, workers=1))
    sharded = load_suite(_sdmx_bench_suite(tmp_path / "b", 400, workers=2))
    assert not can_shard(serial) and can_shard(sharded)
    run_suite(serial, tmp_path / "ra", progress=False)
    result = run_suite(sharded, tmp_path / "rb", progress=False)
    assert result.new_records == 400
    a = json.loads((tmp_path / "ra" / "summary.json").read_text())
    b = json.loads((tmp_path / "rb" / "summary.json").read_text())
    assert a == b
    ra = sorted(read_records(tmp_path / "ra"), key=lambda r: r["case_id"])
    rb = sorted(read_records(tmp_path / "rb"), key=lambda r: r["case_id"])
    assert ra == rb


def test_sharded_run_over_several_case_files_with_blank_lines(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    suite_path = _sdmx_bench_suite(folder, 60, workers=2)
    lines = (folder / "cases.jsonl").read_text().splitlines()
    (folder / "cases.jsonl").unlink()
    (folder / "cases").mkdir()
    (folder / "cases" / "a.jsonl").write_text("\n".join(lines[:25]) + "\n\n")
    (folder / "cases" / "b.jsonl").write_text("\n" + "\n".join(lines[25:]) + "\n")
    suite_path.write_text(suite_path.read_text().replace("cases.jsonl", "'cases/*.jsonl'"))
    serial_path = folder / "serial.yaml"
    serial_path.write_text(suite_path.read_text().replace("workers: 2", "workers: 1"))
    sharded = run_suite(load_suite(suite_path), tmp_path / "r1", progress=False)
    serial = run_suite(load_suite(serial_path), tmp_path / "r2", progress=False)
    assert sharded.new_records == serial.new_records == 60
    assert (tmp_path / "r1" / "summary.json").read_bytes() == (
        tmp_path / "r2" / "summary.json"
    ).read_bytes()
    # a duplicate in the second file is reported at its own line there
    (folder / "cases" / "b.jsonl").write_text("\n" + "\n".join([*lines[25:], lines[3]]) + "\n")
    with pytest.raises(InputError, match="duplicate case id 'case-3'") as info:
        run_suite(load_suite(suite_path), tmp_path / "r3", progress=False)
    assert info.value.path is not None and info.value.path.endswith("b.jsonl")
    assert info.value.line == 37  # a blank first line, then 35 cases
    assert "a.jsonl:4" in info.value.message


@pytest.mark.parametrize("change", ["swap", "attempts", "failures"])
def test_sharded_run_with_predictions_out_of_line(tmp_path: Path, change: str) -> None:
    """Predictions in another order, or several per case, are grouped by case id (the
    line-for-line reading is only a shortcut) and give the serial run's summary."""
    folder = tmp_path / "s"
    suite_path = _sdmx_bench_suite(folder, 60, workers=2)
    preds = folder / "predictions.jsonl"
    lines = preds.read_text().splitlines()
    if change == "swap":
        lines[10], lines[50] = lines[50], lines[10]
    elif change == "failures":  # failures in both shards: missing, the wrong type, empty
        del lines[45]
        lines[5] = json.dumps({"case_id": "case-5", "indicator_selection": "not a list"})
        lines[50] = json.dumps({"case_id": "case-51", "answer": "no selection"})
    else:  # a second attempt for case-39, numbered (and the first given its number)
        first, second = json.loads(lines[39]), json.loads(lines[39])
        first["attempt"], second["attempt"] = 1, 2
        lines[39] = json.dumps(first)
        lines.insert(40, json.dumps(second))
    preds.write_text("\n".join(lines) + "\n")
    serial_path = folder / "serial.yaml"
    serial_path.write_text(suite_path.read_text().replace("workers: 2", "workers: 1"))
    run_suite(load_suite(suite_path), tmp_path / "r1", progress=False)
    run_suite(load_suite(serial_path), tmp_path / "r2", progress=False)
    assert (tmp_path / "r1" / "summary.json").read_bytes() == (
        tmp_path / "r2" / "summary.json"
    ).read_bytes()
    by_case = {r["case_id"]: r for r in read_records(tmp_path / "r1")}
    attempts = by_case["case-39"]["output"]["attempts"]
    assert len(attempts) == (2 if change == "attempts" else 1)
    if change == "failures":
        summary = json.loads((tmp_path / "r1" / "summary.json").read_text())
        failures = summary["systems"]["sys"]["scorers"]["term_selection"]["failures"]
        assert failures == {"empty": 1, "invalid_output": 1, "missing": 1}


def test_sharded_run_cut_short_and_resumed_gives_the_same_summary(tmp_path: Path) -> None:
    """Records read back from disk and records from the workers make one summary: the
    stored rows' scores are aggregated in the parent and merged with the workers' parts."""
    suite = load_suite(_sdmx_bench_suite(tmp_path / "s", 400, workers=2))
    run_suite(suite, tmp_path / "full", progress=False)
    run_suite(suite, tmp_path / "cut", progress=False)
    results = tmp_path / "cut" / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[:150]) + lines[150][:40])  # as SIGKILL leaves it
    again = run_suite(suite, tmp_path / "cut", resume=True, progress=False)
    assert (again.new_records, again.skipped) == (250, 150)
    assert (tmp_path / "cut" / "summary.json").read_bytes() == (
        tmp_path / "full" / "summary.json"
    ).read_bytes()
    ids = [r["case_id"] for r in read_records(tmp_path / "cut")]
    assert len(ids) == len(set(ids)) == 400


def test_sharded_run_reports_a_missing_predictions_file(tmp_path: Path) -> None:
    suite_path = _sdmx_bench_suite(tmp_path / "s", 50, workers=2)
    (tmp_path / "s" / "predictions.jsonl").unlink()
    with pytest.raises(InputError, match="predictions file not found") as info:
        run_suite(load_suite(suite_path), tmp_path / "run", progress=False)
    # named where the suite names it, with the line
    assert info.value.path is not None and info.value.path.endswith("suite.yaml")
    assert info.value.line is not None and "predictions.jsonl" in info.value.message


def test_sharded_run_checks_inputs_before_writing(tmp_path: Path) -> None:
    suite_path = _sdmx_bench_suite(tmp_path / "s", 50, workers=2)
    cases = tmp_path / "s" / "cases.jsonl"
    lines = cases.read_text().splitlines()
    lines[40] = lines[40].replace('"case-40"', '"case-3"')  # a duplicate in the other shard
    cases.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="duplicate case id 'case-3'") as info:
        run_suite(load_suite(suite_path), tmp_path / "run", progress=False)
    assert info.value.line == 41
    assert not (tmp_path / "run" / "results.jsonl").exists()
    lines[40] = lines[40].replace('"case-3"', '"case-40"')
    cases.write_text("\n".join(lines) + "\n")
    with (tmp_path / "s" / "predictions.jsonl").open("a") as f:
        f.write('{"case_id": "ghost", "indicator_selection": []}\n')
    with pytest.raises(InputError, match="unknown case id 'ghost'") as info2:
        run_suite(load_suite(suite_path), tmp_path / "run2", progress=False)
    assert info2.value.line == 51


def test_sharded_run_refuses_text_that_is_not_utf8_or_a_line_too_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forked workers' inputs are checked as every reader's: UTF-8 and the line cap,
    the file and line named, before anything is written."""
    suite_path = _sdmx_bench_suite(tmp_path / "s", 50, workers=2)
    preds = tmp_path / "s" / "predictions.jsonl"
    good = preds.read_bytes()
    lines = good.splitlines(keepends=True)
    preds.write_bytes(
        b"".join(lines[:7]) + lines[7].replace(b"{", b"{\xff", 1) + b"".join(lines[8:])
    )
    with pytest.raises(InputError, match="not UTF-8") as info:
        run_suite(load_suite(suite_path), tmp_path / "run", progress=False)
    assert (str(info.value.path), info.value.line) == (str(preds), 8)
    preds.write_bytes(good)
    monkeypatch.setenv("QUERYEVAL_MAX_LINE_BYTES", str(max(map(len, lines)) - 2))
    with pytest.raises(InputError, match="line longer than") as info2:
        run_suite(load_suite(suite_path), tmp_path / "run", progress=False)
    assert info2.value.path is not None and info2.value.line is not None
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_case_verdict_required_and_informational_scorers() -> None:
    from queryeval.cases import Score
    from queryeval.config import ScorerConfig
    from queryeval.scorers import build_scorer, case_passed

    def scorers(**configs: dict) -> dict:
        return {
            k: build_scorer(ScorerConfig(name="term_selection", id=k, **v))
            for k, v in configs.items()
        }

    ok, bad = Score(value=1.0, passed=True), Score(value=0.0, passed=False)
    none = Score.unscored("no judge")
    plain = scorers(a={}, b={})
    assert case_passed({"a": ok, "b": ok}, plain) is True
    assert case_passed({"a": ok, "b": bad}, plain) is False
    assert case_passed({"a": none, "b": none}, plain) is None
    info = scorers(a={"required": True}, b={"weight": 0})
    assert case_passed({"a": ok, "b": bad}, info) is True  # weight 0 only informs
    assert case_passed({"a": none, "b": ok}, info) is False  # required must pass
    assert case_passed({"a": ok, "b": none}, scorers(a={"weight": 0}, b={})) is None


def test_console_prints_scorer_tables_and_escapes_names() -> None:
    from io import StringIO

    from rich.console import Console

    from queryeval.reports._console import print_summary
    from queryeval.scorers import Scorer, register_scorer

    @register_scorer("test_tables")
    class Tables(Scorer):
        @classmethod
        def report_tables(cls, aggregate: dict) -> list:
            return [("report", [["metric", "value"], ["Pass@1", aggregate["p"]]])]

    summary = {
        "suite": "s",
        "systems": {
            "rag[top_k=1]": {
                "cases": 2,
                "pass_rate": 0.5,
                "scorers": {
                    "t": {
                        "mean": 0.5,
                        "ok": 2,
                        "metrics": {},
                        "scorer": {"name": "test_tables"},
                        "aggregate": {"p": 0.25},
                    }
                },
            }
        },
    }
    out = StringIO()
    print_summary(summary, Console(file=out, width=120))
    text = out.getvalue()
    assert "rag[top_k=1]" in text  # not swallowed as rich markup
    assert "t: report" in text and "Pass@1" in text and "0.250" in text


_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
_TERMS = st.lists(
    st.fixed_dictionaries({"id": _TEXT}, optional={"name": st.none() | _TEXT}), max_size=3
)
_SELECTION = st.lists(
    st.fixed_dictionaries(
        {"dataset_id": _TEXT},
        optional={
            "dimensions": st.lists(
                st.fixed_dictionaries({"dimension_name": _TEXT}, optional={"values": _TERMS}),
                max_size=2,
            )
        },
    ),
    max_size=2,
)
_RECORD = st.fixed_dictionaries(
    {},
    optional={
        "query": _TEXT,
        "answer": _TEXT,
        "indicator_selection": _SELECTION,
        "cost": st.floats(0, 1),
        "extra_field": _TEXT,
    },
)


@given(record=_RECORD, error=st.none() | _TEXT)
def test_stored_output_json_is_pydantics(record: dict, error: str | None) -> None:
    """The orjson shortcut for one-field attempts writes exactly pydantic's JSON."""
    import orjson

    from queryeval.cases import Output
    from queryeval.runner._pipeline import output_json

    raw = {"attempts": [record]} if error is None else {"attempts": [record], "error": error}
    output = Output.model_validate_json(orjson.dumps(raw))
    output.attempts[0].__pydantic_extra__.pop("extra_field", None)  # as case_id is
    got = output_json(output)
    assert (got if isinstance(got, bytes) else got.encode()) == output.model_dump_json(
        exclude_defaults=True
    ).encode()


def _children(pid: int) -> set[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return set()
    return {int(p) for p in text.split()}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal")
def test_sharded_workers_end_when_the_run_is_killed(tmp_path: Path) -> None:
    """SIGKILL of a sharded run's process ends its workers too (they held gigabytes and
    scored on); nothing is written after the run's process is gone."""
    suite_path = _sdmx_bench_suite(tmp_path / "s", 60_000, workers=2)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "queryeval", "run", str(suite_path), "--out", str(run_dir),
         "--no-progress"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    workers: set[int] = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(workers) < 2 and proc.poll() is None:
        workers = _children(proc.pid)
        time.sleep(0.01)
    assert len(workers) >= 2, "the run ended before its workers were seen"
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers)
    results = run_dir / "results.jsonl"
    size = results.stat().st_size if results.exists() else 0
    time.sleep(0.5)
    assert (results.stat().st_size if results.exists() else 0) == size


def _kill_then_resume(
    suite_path: Path, tmp_path: Path, name: str, share: float, ref: Path | None = None
) -> None:
    """Run into a fresh folder, SIGKILL the run once about `share` of the reference run's
    bytes are on disk, resume: the same summary.json byte for byte, every record once.
    `ref`: the uninterrupted run's folder (made here when it holds none)."""
    ref = ref or tmp_path / "ref"
    if not (ref / "summary.json").exists():
        done = _cli("run", str(suite_path), "--out", str(ref), "--no-progress", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    full = (ref / "results.jsonl").stat().st_size
    n = (ref / "results.jsonl").read_bytes().count(b"\n")
    run_dir = tmp_path / name
    proc = subprocess.Popen(
        [sys.executable, "-m", "queryeval", "run", str(suite_path), "--out", str(run_dir),
         "--no-progress"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    results = run_dir / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and results.stat().st_size >= share * full:
            break
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = results.read_bytes().count(b"\n") if results.exists() else 0
    assert kept < n, f"the kill at {share:.0%} came after the run ended"
    resumed = _cli(
        "run", str(suite_path), "--out", str(run_dir), "--resume", "--no-progress", cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    keys = [(r["system"], r["case_id"]) for r in read_records(run_dir)]
    assert len(keys) == n and len(set(keys)) == n  # no duplicates, nothing missing
    assert (run_dir / "summary.json").read_bytes() == (ref / "summary.json").read_bytes()


@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_kill_at_any_point_of_a_plain_run_then_resume(tmp_path: Path, share: float) -> None:
    suite = make_answer_suite(
        tmp_path / "s", 1500, scorers="  - {name: test_slow_echo, options: {sleep_s: 0.002}}\n"
    )
    _kill_then_resume(suite, tmp_path, "killed", random.Random(share).uniform(0.8, 1.0) * share)


@pytest.fixture(scope="module")
def sharded_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A sharded SDMX suite (20,000 cases, two workers) and the folder of its uninterrupted
    run (made by the first test that needs it), shared by the kill tests."""
    folder = tmp_path_factory.mktemp("sharded")
    return _sdmx_bench_suite(folder / "s", 20_000, workers=2), folder / "ref"


@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_kill_at_any_point_of_a_sharded_run_then_resume(
    tmp_path: Path, share: float, sharded_suite: tuple[Path, Path]
) -> None:
    suite, ref = sharded_suite
    at = random.Random(share).uniform(0.8, 1.0) * share
    _kill_then_resume(suite, tmp_path, "killed", at, ref=ref)


_CORRUPTIONS = {
    "case invalid JSON": ("cases", lambda ls: ls.__setitem__(30, ls[30][:-5])),
    "case missing field": ("cases", lambda ls: ls.__setitem__(12, '{"id": "x"}')),
    "case id repeated": (
        "cases",
        lambda ls: ls.__setitem__(44, ls[44].replace("case-44", "case-2")),
    ),
    "prediction not an object": ("preds", lambda ls: ls.__setitem__(20, "[1, 2]")),
    "prediction bad attempt": (
        "preds",
        lambda ls: ls.__setitem__(33, ls[33].replace('"case_id"', '"attempt": "one", "case_id"')),
    ),
    "prediction repeated": ("preds", lambda ls: ls.insert(50, ls[5])),
    "prediction unknown": (
        "preds",
        lambda ls: ls.insert(25, '{"case_id": "ghost", "answer": "a"}'),
    ),
    "prediction invalid JSON": ("preds", lambda ls: ls.__setitem__(40, ls[40] + "}")),
    "predictions empty": ("preds", lambda ls: ls.clear()),
}


@pytest.mark.parametrize("corruption", sorted(_CORRUPTIONS))
def test_a_sharded_run_refuses_bad_input_as_the_plain_run_does(
    tmp_path: Path, corruption: str
) -> None:
    """Every input check of a plain run, on every class of bad line, gives the same error
    (message, file, line, place) in a sharded run, whose ranges end mid-file; nothing is
    written by either."""
    from queryeval.runner import _units

    which, change = _CORRUPTIONS[corruption]
    folder = tmp_path / "s"
    suite_path = _sdmx_bench_suite(folder, 60, workers=2)
    target = folder / ("cases.jsonl" if which == "cases" else "predictions.jsonl")
    lines = target.read_text().splitlines()
    change(lines)
    target.write_text("".join(line + "\n" for line in lines))
    serial_path = folder / "serial.yaml"
    serial_path.write_text(suite_path.read_text().replace("workers: 2", "workers: 1"))
    errors = []
    for path, out in ((serial_path, "r1"), (suite_path, "r2")):
        # small ranges, so the bad line is in the middle of the run's ranges
        with pytest.raises(InputError) as info, pytest.MonkeyPatch.context() as mp:
            mp.setattr(_units, "_MIN_SHARD_BYTES", 2000)
            run_suite(load_suite(path), tmp_path / out, progress=False)
        errors.append((info.value.message, info.value.path, info.value.line, info.value.where))
        assert not (tmp_path / out / "results.jsonl").exists()
    assert errors[0] == errors[1]


def test_a_sharded_run_reads_bom_and_crlf_files_as_the_plain_run(tmp_path: Path) -> None:
    """Byte-order marks and CRLF line ends (files written on Windows) read the same in
    ranges as line by line: the same records, the same summary."""
    from queryeval.runner import _units

    folder = tmp_path / "s"
    suite_path = _sdmx_bench_suite(folder, 80, workers=2)
    for name in ("cases.jsonl", "predictions.jsonl"):
        text = (folder / name).read_text()
        (folder / name).write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    serial_path = folder / "serial.yaml"
    serial_path.write_text(suite_path.read_text().replace("workers: 2", "workers: 1"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_units, "_MIN_SHARD_BYTES", 3000)
        run_suite(load_suite(suite_path), tmp_path / "r1", progress=False)
    run_suite(load_suite(serial_path), tmp_path / "r2", progress=False)
    assert (tmp_path / "r1" / "summary.json").read_bytes() == (
        tmp_path / "r2" / "summary.json"
    ).read_bytes()
    one = sorted(read_records(tmp_path / "r1"), key=lambda r: r["case_id"])
    two = sorted(read_records(tmp_path / "r2"), key=lambda r: r["case_id"])
    assert one == two and len(one) == 80
