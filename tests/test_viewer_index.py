"""The index's fast paths against the slow ones they replace: a case read from its JSON
(`case_fields`, for a run's validated case files) gives what the validated `Case` gives, on
every example case and on the shapes the model rewrites; the records' columns
(`RecordColumns`) hold what each record says, a column that appears later null before it.
"""

from __future__ import annotations

import copy
import glob
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from queryeval.cases import Case
from queryeval.log import RecordColumns
from queryeval.viewer._gold import Unusual, case_fields, gold_text

ROOT = Path(__file__).resolve().parent.parent


def _example_cases() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for name in sorted(glob.glob(str(ROOT / "examples" / "**" / "*.yaml"), recursive=True)):
        data = yaml.load(Path(name).read_text(), Loader=yaml.CSafeLoader)
        items = data.get("cases") if isinstance(data, dict) and "cases" in data else data
        items = items if isinstance(items, list) else [items]
        found += [i for i in items if isinstance(i, dict) and "conversation" in i]
    for line in (ROOT / "examples" / "regression" / "cases.jsonl").read_bytes().splitlines():
        found.append(orjson.loads(line))
    return found


def _model(data: dict[str, Any]) -> tuple[str, str, str, list[str]]:
    case = Case.model_validate_json(orjson.dumps(data))
    return case.id, case.question, gold_text(case), list(case.tags)


def test_every_example_case_reads_as_the_model_reads_it() -> None:
    cases = _example_cases()
    fast = 0
    for data in cases:
        expected = _model(data)
        try:
            got = case_fields(data)
        except Unusual:
            continue
        assert got == expected, data.get("id")
        fast += 1
    assert len(cases) > 50 and fast == len(cases)  # every kind of gold among them


SDMX = {"indicator_selection": [{"dimensions": [{"values": [{"name": "GDP", "id": "NGDP"}],
                                                 "dimension_name": "INDICATOR"}],
                                 "dataset_id": "WEO"}]}  # fmt: skip


@pytest.mark.parametrize(
    "conversation",
    [
        [{"content": "q", "target": SDMX}],  # keys in another order than the model's
        [{"content": "q", "target": [{"query": "SELECT 1"}, {"answer": {"text": "one"}}],
          "alternatives": [{"query": {"text": "SELECT 2", "language": "kql"}}]}],
        [{"content": "first", "target": {"answer": "a"}},
         {"role": "assistant", "content": "x", "target": [], "alternatives": [{"answer": "b"}]}],
        [{"role": "system", "content": "only"}, {"role": "assistant", "content": "last"}],
        [{"content": "q", "target": {"result": {"columns": ["a", "b"], "rows": [[1, 2]]},
                                     "weaviate_query": {"collection": "C", "limit": 3}}}],
        [{"content": "q", "target": {"indicator_selection": [{"dataset_id": "D"},
                                     {"dataset_id": "E", "dimensions": None}]}}],
    ],
)  # fmt: skip
def test_a_case_the_model_rewrites_reads_the_same(conversation: list[dict[str, Any]]) -> None:
    data = {"id": "c", "tags": ["x"], "conversation": conversation}
    assert case_fields(copy.deepcopy(data)) == _model(data)


@pytest.mark.parametrize(
    "data",
    [
        {"id": 5, "conversation": [{"content": "q"}]},  # the model makes it "5"
        {"id": "c", "tags": [1], "conversation": [{"content": "q"}]},
        {"id": "c", "conversation": [{"content": "q", "target": {"indicator_selection": [
            {"dataset_id": "D", "dimensions": [{"dimension_name": "I",
                                                "values": [{"id": 7, "name": 8}]}]}]}}]},
    ],
)  # fmt: skip
def test_numbers_where_text_goes_are_left_to_the_model(data: dict[str, Any]) -> None:
    with pytest.raises(Unusual):
        case_fields(data)


def test_record_columns_hold_each_records_values() -> None:
    records = [
        {"system": "s", "case_id": "a", "passed": True, "error": None, "latency_s": 0.5,
         "output": {"attempts": [{"answer": "x", "tokens_in": 3}, {"query": "Q", "tokens_in": 4,
                                                                   "tokens_out": 2}]},
         "scores": {"em": {"value": 1.0, "status": "ok", "passed": True,
                           "details": {"metrics": {"f1": 0.5, "bad": float("nan")}}}}},
        {"system": "s", "case_id": "b", "passed": None, "error": "boom", "output": {},
         "scores": {"em": {"value": None, "status": "unscored", "explanation": "no judge\nmore"}}},
        {"system": "t", "case_id": "c", "passed": False, "error": None,
         "output": {"attempts": [{"latency_s": 1.0}, {"latency_s": 2}, "junk"]},
         "scores": {"em": {"value": 0.0, "status": "ok", "passed": False,
                           "details": {"failure": "wrong_result"}},
                    "judge": {"value": 0.25, "status": "ok", "passed": False}}},
    ]  # fmt: skip
    columns = RecordColumns()
    for rec in records:
        columns.add(rec)
    table = columns.table({"row": [0, 1, 2]})
    assert table.column_names == [
        "system", "case_id", "passed", "error", "latency", "cost", "tokens_in", "tokens_out",
        "attempts", "prediction", "v:em", "m:em.f1", "reason", "status", "row", "v:judge",
    ]  # fmt: skip
    rows = table.to_pylist()
    assert [r["status"] for r in rows] == ["pass", "error", "fail"]
    assert [r["reason"] for r in rows] == [None, "system error", "wrong result"]
    assert [r["latency"] for r in rows] == [0.5, None, 3.0]
    assert [(r["tokens_in"], r["tokens_out"]) for r in rows] == [(7, 2), (None, None), (None, None)]
    assert [r["attempts"] for r in rows] == [2, 0, 2]
    assert [r["prediction"] for r in rows] == ["Q", "", ""]
    assert [r["v:em"] for r in rows] == [1.0, None, 0.0]
    assert [r["m:em.f1"] for r in rows] == [0.5, None, None]
    assert [r["v:judge"] for r in rows] == [None, None, 0.25]
    assert [r["error"] for r in rows] == [None, "boom", None]
    assert columns.row(2)["v:judge"] == 0.25 and "m:em.f1" not in columns.row(2)


def _index_rows(index: Any) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(p) for p in index.parts]
    return pa.concat_tables(tables, promote_options="default").to_pylist()


def test_an_index_read_in_ranges_of_a_few_lines_is_the_one_read_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """results.jsonl read in ranges of a few lines (bad lines, a repeated record and a torn
    last line among them), then lines appended: the same rows, parts, counts, bad lines
    and cases as the index that reads it in one range."""
    import sys

    from queryeval.viewer import RunIndex, _index

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_viewer import make_run, write_cases

    monkeypatch.setattr(_index, "PART_ROWS", 7)
    cases = write_cases(tmp_path / "cases.jsonl", 30)
    run = make_run(tmp_path / "runs" / "r", cases, 30, systems=("a", "b"), seed=5)
    lines = (run / "results.jsonl").read_bytes().splitlines(keepends=True)
    body = [*lines[:9], b"not json\n", b"\n", *lines[9:40], lines[3], b"[1]\n", *lines[40:50]]
    states = {}
    for size, root in ((1500, tmp_path / "ranges"), (2**30, tmp_path / "whole")):
        monkeypatch.setattr(_index, "_RANGE_BYTES", size)
        (run / "results.jsonl").write_bytes(b"".join(body) + b'{"system": "a", "ca')
        index = RunIndex(run, root, cases_checked=True)
        first = index.refresh()
        assert index.torn_tail and first.rows == 51 and first.duplicates == 1
        assert [b["line"] for b in first.bad] == [10, 44] and first.bad_count == 2
        with (run / "results.jsonl").open("ab") as f:  # the torn line completed, and more
            f.write(b'se_id": "c000001"}\n' + b"".join(lines[50:]))
        state = index.refresh()
        assert not index.torn_tail and state.rows == 51 + 1 + len(lines) - 50
        states[size] = ({**state.as_dict(), "generation": "", "inode": 0, "parts": len(
            state.parts)}, _index_rows(index), index.case("c000004"))  # fmt: skip
    assert states[1500] == states[2**30]
    rows = states[1500][1]
    assert [r["row"] for r in rows] == list(range(len(rows)))
    assert [r["offset"] for r in rows] == sorted(r["offset"] for r in rows)
