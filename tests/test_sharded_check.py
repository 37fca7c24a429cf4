"""The first pass of a large run (`runner._shard_check`): what it keeps of the cases."""

from __future__ import annotations

import json
from pathlib import Path

from queryeval.cases import Case
from queryeval.runner._executors import LocalExecutor
from queryeval.runner._ranges import split_file
from queryeval.runner._shard_check import check_inputs


def test_sharded_case_stubs_keep_every_field(tmp_path: Path) -> None:
    """The first pass keeps what summaries and `aggregate` read of every case (id, name,
    tags, metadata, labels), over several ranges, in case order."""

    def case(i: int, **extra: dict) -> dict:
        turn = {"role": "user", "content": f"q{i}"}
        return {"id": f"c{i}", "name": f"n{i}", "tags": [f"t{i}"], "conversation": [turn], **extra}

    raw = [case(0), case(1, metadata={"m": 1}), case(2, labels={"correct": 1}), case(3)]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in raw))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"case_id": c["id"], "answer": "a"}) + "\n" for c in raw))
    ranges = split_file(cases, 100)
    assert len(ranges) > 1
    preds_ranges = {"s": split_file(preds, 40)}
    with LocalExecutor(2) as pool:  # the ranges checked in forked workers
        units, stubs = check_inputs(ranges, preds_ranges, {"s": preds}, pool.map, set())
    want = [Case.model_validate(c) for c in raw]
    got = [(s.id, s.name, s.tags, s.metadata, s.labels) for s in stubs]
    assert got == [(c.id, c.name, c.tags, c.metadata, c.labels) for c in want]
    assert sum(unit.count for unit in units) == 4
