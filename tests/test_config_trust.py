"""The user's configuration never turns into a system's score: a prediction record with an
unknown key, a reply cache pointed at another deployment, a model server that refuses every
connection, a wrong `output:` path, a database that cannot be read or a key that is not set
each stop the run (exit 2, naming the place) or are named for what they are; `validate`
runs the checks `run` does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from queryeval.cli import app
from queryeval.errors import InputError
from queryeval.runner import load_suite, run_suite

ROOT = Path(__file__).resolve().parent.parent
SALES = ROOT / "examples" / "sql" / "fixtures" / "sales"

SUITE = f"""name: trust
cases: cases.yaml
databases:
  sales: {{engine: duckdb, fixture: {SALES}}}
systems:
  - {{name: baseline, predictions: predictions.jsonl}}
scorers: [execution_match]
reports: [json]
"""
CASES = """- id: q1
  conversation:
    - content: How many customers are there?
      target: {query: "SELECT count(*) FROM customers"}
- id: q2
  conversation:
    - content: How many orders are there?
      target: {query: "SELECT count(*) FROM orders"}
"""


def make_suite(folder: Path, predictions: str, suite: str = SUITE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "suite.yaml").write_text(suite)
    (folder / "cases.yaml").write_text(CASES)
    (folder / "predictions.jsonl").write_text(predictions)
    return folder / "suite.yaml"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


# --- prediction records ------------------------------------------------------------------


def test_a_language_named_query_field_is_the_query(tmp_path: Path) -> None:
    """`"sql"` is the most natural name of the field: read as the query, scored as one."""
    path = make_suite(
        tmp_path / "s",
        '{"case_id": "q1", "sql": "SELECT count(*) FROM customers"}\n'
        '{"case_id": "q2", "sql": "SELECT count(*) FROM orders"}\n',
    )
    code, _, err = invoke("validate", str(path), "--no-golds")
    assert code == 0, err
    code, _, err = invoke("run", str(path), "--out", str(tmp_path / "r"), "--no-progress")
    assert code == 0, err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["systems"]["baseline"]["scorers"]["execution_match"]["mean"] == 1.0
    records = [json.loads(x) for x in (tmp_path / "r" / "results.jsonl").open()]
    assert {r["output"]["attempts"][0]["language"] for r in records} == {"sql"}


@pytest.mark.parametrize(
    ("record", "where", "words"),
    [
        ('{"case_id": "q2", "qurey": "SELECT 1"}', "qurey", "did you mean 'query'?"),
        ('{"case_id": "q2", "prediction": "SELECT 1"}', "prediction", "did you mean 'query'?"),
        ('{"case_id": "q2", "query": "SELECT 1", "sql": "SELECT 2"}', "sql", "'query' and 'sql'"),
        ('{"case_id": "q2", "sql": "SELECT 1", "kql": "T"}', "kql", "'sql' and 'kql'"),
        ('{"case_id": "q2", "attempts": [{"qurey": "SELECT 1"}]}', "attempts[0].qurey", "'query'"),
        ('{"case_id": "q2", "attempts": [], "query": "SELECT 1"}', "query", "beside 'attempts'"),
        ('{"id": "q2", "query": "SELECT 1"}', "case_id", "names its case with 'id'"),
    ],
)
def test_an_unknown_key_in_a_prediction_record_stops_validate_and_run(
    tmp_path: Path, record: str, where: str, words: str
) -> None:
    path = make_suite(tmp_path / "s", '{"case_id": "q1", "query": "SELECT 1"}\n' + record + "\n")
    for command in (
        ["validate", str(path), "--no-golds"],
        ["run", str(path), "--out", str(tmp_path / "r")],
    ):
        code, _, err = invoke(*command)
        assert code == 2, (command, err)
        assert err.startswith(f"error: {tmp_path / 's' / 'predictions.jsonl'}:2: {where}: "), err
        assert words in err
    assert not (tmp_path / "r").exists()


def test_language_named_fields_in_attempts_are_queries_too() -> None:
    from queryeval.systems import prediction_key, read_prediction_line

    raw = b'{"case_id": "q1", "attempts": [{"cypher": "MATCH (n) RETURN n"}, {"query": "x"}]}'
    output = read_prediction_line(raw, Path("p.jsonl"), 1, ("query",)).output
    assert [(a.query, a.language) for a in output.attempts] == [
        ("MATCH (n) RETURN n", "cypher"),
        ("x", None),
    ]
    nested = b'{"case_id": "q1", "output": {"attempts": [{"kql": "T | count"}]}}'
    final = read_prediction_line(nested, Path("p.jsonl"), 1).output.final
    assert final is not None and (final.query, final.language) == ("T | count", "kql")
    both = b'{"case_id": "q1", "attempts": [{"kql": "T", "query": "x"}]}'
    for read in (read_prediction_line, prediction_key):
        with pytest.raises(InputError) as info:
            read(both, Path("p.jsonl"), 4)
        assert info.value.line == 4 and info.value.where == "attempts[0].kql"


def test_notes_beside_a_prediction_are_kept_out_of_the_way(tmp_path: Path) -> None:
    """The examples annotate predictions with `note`: an annotation, not an unknown key."""
    path = make_suite(
        tmp_path / "s",
        '{"case_id": "q1", "query": "SELECT count(*) FROM customers", "note": "right"}\n'
        '{"case_id": "q2", "query": "SELECT 1", "comment": "wrong"}\n',
    )
    assert invoke("validate", str(path), "--no-golds")[0] == 0


def _sharded_suite(folder: Path, n: int) -> Path:
    sys.path.insert(0, str(ROOT / "bench"))
    from _sdmx_data import write_suite

    suite = write_suite(folder, n)
    suite.write_text(suite.read_text() + "settings: {workers: 2, shard_min_cases: 10}\n")
    return suite


def test_a_sharded_run_refuses_an_unknown_key_as_a_serial_run_does(tmp_path: Path) -> None:
    from queryeval.runner._units import can_shard

    path = _sharded_suite(tmp_path / "s", 50)
    assert can_shard(load_suite(path))
    preds = tmp_path / "s" / "predictions.jsonl"
    lines = preds.read_text().splitlines()
    lines[40] = lines[40].replace('"indicator_selection"', '"indicator_selectoin"')
    assert "indicator_selectoin" in lines[40]
    preds.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="did you mean 'indicator_selection'") as info:
        run_suite(load_suite(path), tmp_path / "run", progress=False)
    assert info.value.line == 41 and info.value.path == str(preds)
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_a_language_named_field_in_an_imported_predictions_file(tmp_path: Path) -> None:
    """`queryeval import ... --predictions`: a file whose records have none of the query
    fields, but a near miss, is refused naming the line; none of them at all is refused too
    (every prediction would otherwise be a silent failure)."""
    from queryeval.importers._records import read_predictions

    typo = tmp_path / "p.jsonl"
    typo.write_text('{"id": "a", "predicted_query": "x"}\n{"id": "b", "predicted_qurey": "y"}\n')
    with pytest.raises(InputError, match="did you mean 'predicted_query'") as info:
        read_predictions(typo, {"a", "b"}, ["predicted_query", "query"], "kql")
    assert info.value.line == 2
    none = tmp_path / "n.jsonl"
    none.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n')
    with pytest.raises(InputError, match="none of its records has a query"):
        read_predictions(none, {"a", "b"}, ["predicted_query", "query"], "kql")
    fine = tmp_path / "f.jsonl"
    fine.write_text('{"id": "a", "query": "x"}\n{"id": "b", "query": ""}\n')
    got = read_predictions(fine, {"a", "b"}, ["predicted_query", "query"], "kql")
    assert got[1] == {"case_id": "b", "error": "no prediction"}


# --- JSONL errors -------------------------------------------------------------------------


def test_a_jsonl_error_names_the_column_without_an_inner_line(tmp_path: Path) -> None:
    path = make_suite(tmp_path / "s", '{"case_id": "q1", "query": "SELECT 1"}\n{"case_id": q2}\n')
    code, _, err = invoke("validate", str(path), "--no-golds")
    assert code == 2
    assert err.strip() == (
        f"error: {tmp_path / 's' / 'predictions.jsonl'}:2: invalid JSON at column 13: "
        "unexpected character, expected a JSON value"
    )
    assert "line 1" not in err
    cases = tmp_path / "c.jsonl"
    cases.write_text('{"id": "a", "conversation": [{"content": "x"}]}\n{"id": "b", x}\n')
    from queryeval.cases import load_cases

    with pytest.raises(InputError) as info:
        load_cases(str(cases))
    assert info.value.render() == f"{cases}:2: invalid JSON at column 13: key must be a string"


# --- live systems: the reply cache, unreachable servers, the output path --------------------


def _dead_url() -> str:
    """A local URL nothing listens on (a port just freed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _model_suite(folder: Path, base_url: str, cases: dict[str, str] | None = None) -> Path:
    from systems_support import model_system, write_suite

    folder.mkdir(parents=True, exist_ok=True)
    return write_suite(folder, model_system(base_url, model={"max_attempts": 2}), cases=cases)


def _mean(out: Path) -> float:
    summary = json.loads((out / "summary.json").read_text())
    return float(summary["systems"]["gpt"]["scorers"]["execution_match"]["mean"])


def test_the_reply_cache_is_keyed_by_the_deployment(tmp_path: Path) -> None:
    """Another server answering to the same model name is asked, never answered with the
    first one's replies; the first one's replies are still cached for it."""
    from fakes.openai_server import FakeOpenAI, Reply
    from systems_support import CASES, answering, fenced

    right = answering({q: fenced(sql) for q, sql in CASES.items()})
    with FakeOpenAI(right) as a, FakeOpenAI(Reply.text("SELECT 42")) as b:
        run_suite(load_suite(_model_suite(tmp_path, a.base_url)), tmp_path / "ra", progress=False)
        assert a.chat_calls == 4 and _mean(tmp_path / "ra") == 1.0
        path = _model_suite(tmp_path, b.base_url)  # same model name, same cache folder
        run_suite(load_suite(path), tmp_path / "rb", progress=False)
        assert b.chat_calls == 4 and _mean(tmp_path / "rb") == 0.0
        run_suite(load_suite(_model_suite(tmp_path, a.base_url)), tmp_path / "rc", progress=False)
        assert a.chat_calls == 4 and _mean(tmp_path / "rc") == 1.0  # from the cache


@pytest.mark.parametrize("cache", ["--cache", "--no-cache"])
def test_a_model_server_that_refuses_every_connection_stops_the_run(
    tmp_path: Path, cache: str
) -> None:
    """A dead port is never answered from the cache (of the server that was there), and
    with or without the cache the run stops with exit 2 naming the base_url: an
    unreachable server is not a model scoring 0. The cases finished are kept."""
    from fakes.openai_server import FakeOpenAI
    from systems_support import CASES, answering, fenced

    first_two = dict(list(CASES.items())[:2])
    with FakeOpenAI(answering({q: fenced(sql) for q, sql in CASES.items()})) as live:
        url = live.base_url
        path = _model_suite(tmp_path, url, cases=first_two)
        run_suite(load_suite(path), tmp_path / "r1", progress=False)
        assert live.chat_calls == 2
    path = _model_suite(tmp_path, url)  # the same URL, nothing listening any more
    out = tmp_path / "r2"
    code, _, err = invoke("run", str(path), "--out", str(out), cache, "--no-progress")
    assert code == 2, err
    assert err.startswith(f"error: {path}:"), err
    assert "systems[0].model.base_url: cannot connect to " + url in err
    kept = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    if cache == "--cache":  # the two cases the server answered before, from the cache
        assert sorted(r["case_id"] for r in kept) == ["q1", "q2"]
        assert all(r["passed"] for r in kept)
    else:
        assert kept == []


def test_a_server_reached_once_is_not_unreachable() -> None:
    """Refused connections after a call reached the server are the system's failures."""
    from queryeval.config import ChatEndpoint
    from queryeval.llm import CallError, ChatService

    service = ChatService(ChatEndpoint(model="m", base_url="http://x/v1", api_key_env=None))
    service._failed(CallError("HTTP 500", 6, 500))
    service._failed(CallError("refused", 6, connection=True))
    assert service.unreachable() is None
    fresh = ChatService(ChatEndpoint(model="m", base_url="http://x/v1", api_key_env=None))
    fresh._failed(CallError("refused", 6, connection=True))
    assert "cannot connect to http://x/v1" in (fresh.unreachable() or "")


def test_an_endpoint_that_refuses_every_connection_stops_the_run(tmp_path: Path) -> None:
    from systems_support import write_suite

    url = _dead_url().removesuffix("/v1") + "/ask"
    system = {"name": "svc", "endpoint": {"url": url, "max_attempts": 2, "backoff_base_s": 0.01}}
    (tmp_path / "s").mkdir()
    path = write_suite(tmp_path / "s", system)
    code, _, err = invoke("run", str(path), "--out", str(tmp_path / "r"), "--no-progress")
    assert code == 2, err
    assert f"systems[0].endpoint.url: cannot connect to {url}" in err


def test_a_wrong_output_path_is_invalid_output_naming_the_path(tmp_path: Path) -> None:
    from fakes.json_service import JsonService
    from systems_support import records, write_suite

    with JsonService(lambda body, route: (200, {"result": {"sql": "SELECT 1"}})) as svc:
        system = {"name": "svc", "endpoint": {"url": f"{svc.url}/ask", "output": "result.query"}}
        path = write_suite(tmp_path, system)
        run_suite(load_suite(path), tmp_path / "r", progress=False)
    for record in records(tmp_path / "r").values():
        assert record["output"]["failure"] == "invalid_output"
        assert "has no 'result.query'" in record["output"]["error"]
        assert '{"result": {"sql": "SELECT 1"}}' in record["output"]["error"]
        score = record["scores"]["execution_match"]
        assert score["value"] == 0 and score["details"]["failure"] == "invalid_output"


# --- validate runs every check run does ----------------------------------------------------


def _corrupt_sqlite(path: Path) -> None:
    """An SQLite file whose catalog reads but whose table pages are garbage: every query on
    the table is the engine's error (SQLITE_CORRUPT)."""
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    db.executemany("INSERT INTO customers VALUES (?, ?)", [(i, "x" * 50) for i in range(5000)])
    db.commit()
    db.close()
    data = bytearray(path.read_bytes())
    for offset in range(4096 * 2, len(data), 4096):
        data[offset : offset + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", ["garbage duckdb", "garbage sqlite", "corrupt sqlite"])
def test_a_database_that_cannot_be_read_stops_validate_and_run(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "s"
    engine = "duckdb" if "duckdb" in kind else "sqlite"
    suite = SUITE.replace(
        f"sales: {{engine: duckdb, fixture: {SALES}}}", f"sales: {{engine: {engine}, path: db.bin}}"
    )
    path = make_suite(
        folder,
        '{"case_id": "q1", "query": "SELECT 1"}\n{"case_id": "q2", "query": "SELECT 1"}\n',
        suite,
    )
    if kind == "corrupt sqlite":
        _corrupt_sqlite(folder / "db.bin")
        (folder / "cases.yaml").write_text(CASES.replace("FROM orders", "FROM customers"))
        expected = (
            "databases.sales: every gold query tried on database 'sales' fails with an engine error"
        )
    else:
        (folder / "db.bin").write_bytes(bytes(range(256)) * 40)
        expected = "databases.sales.path: cannot read the database: "
    for command in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "r")]):
        code, _, err = invoke(*command)
        assert code == 2, (command, err)
        assert err.startswith(f"error: {path}:"), err
        assert expected in err, err
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_validate_refuses_a_model_whose_key_variable_is_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from systems_support import model_system, write_suite

    monkeypatch.delenv("QE_TRUST_NO_SUCH_KEY", raising=False)
    system = model_system("http://127.0.0.1:9/v1", model={"api_key_env": "QE_TRUST_NO_SUCH_KEY"})
    path = write_suite(tmp_path, system)
    code, _, err = invoke("validate", str(path), "--no-probe", "--no-golds")
    assert code == 2, err
    assert "systems[0].model.api_key_env: environment variable QE_TRUST_NO_SUCH_KEY" in err


def test_validate_probes_models_and_endpoints(tmp_path: Path) -> None:
    """A model server and a service that answer pass; a dead port, a 404 URL and an
    `output:` path that is in none of the service's replies are exit 2 at their key."""
    from fakes.json_service import JsonService
    from fakes.openai_server import FakeOpenAI, Reply
    from systems_support import model_system, write_suite

    def service(body: object, route: str) -> tuple[object, ...]:
        if route != "/ask":
            return 404, {"detail": "Not Found"}
        return 200, {"result": {"sql": "SELECT 1"}}

    with FakeOpenAI(Reply.text("OK")) as server, JsonService(service) as svc:
        checks = [
            (model_system(server.base_url), None),
            ({"name": "svc", "endpoint": {"url": f"{svc.url}/ask", "output": "result.sql"}}, None),
            (
                model_system(_dead_url(), model={"max_attempts": 1}),
                "systems[0].model: cannot connect to http://127.0.0.1:",
            ),
            (
                model_system(f"{svc.url}/v1"),  # a server without the chat completions path
                "systems[0].model: the endpoint does not know this model or path",
            ),
            (
                {"name": "svc", "endpoint": {"url": f"{svc.url}/nope", "output": "result.sql"}},
                "systems[0].endpoint.url: no such URL on the service",
            ),
            (
                {"name": "svc", "endpoint": {"url": f"{svc.url}/ask", "output": "result.query"}},
                "systems[0].endpoint.output: output: 'result.query' is not in the service",
            ),
        ]
        for i, (system, expected) in enumerate(checks):
            folder = tmp_path / str(i)
            folder.mkdir()
            path = write_suite(folder, system)
            code, out, err = invoke("validate", str(path), "--no-golds")
            if expected is None:
                assert code == 0, err
                assert out.startswith("ok: 4 cases")
            else:
                assert code == 2, (system, out)
                assert expected in err, err
            assert invoke("validate", str(path), "--no-golds", "--no-probe")[0] == 0
        assert server.chat_calls == 1 and server.chat_requests[0].body["max_tokens"] == 1


def test_a_model_request_key_names_the_deployment(tmp_path: Path) -> None:
    from queryeval.systems import build_system
    from systems_support import model_system, write_suite

    def key(base_url: str, model: str = "fake-sql") -> str:
        folder = tmp_path / str(abs(hash((base_url, model))))
        folder.mkdir(exist_ok=True)
        suite = load_suite(write_suite(folder, model_system(base_url, model={"model": model})))
        system = build_system(suite, 0, suite.systems[0])
        return system.key([{"role": "user", "content": "q"}], 0)  # type: ignore[attr-defined]

    a = key("http://127.0.0.1:8000/v1")
    assert a == key("http://127.0.0.1:8000/v1/")  # the same endpoint
    assert a != key("http://127.0.0.1:8001/v1")
    assert a != key("http://127.0.0.1:8000/v1", model="other")


def test_a_request_is_unreachable_only_when_no_try_reached_the_server() -> None:
    """`CallError.connection`: every try failed to connect. One try answered (a 500) makes
    the request the system's failure, not an unreachable server."""
    import asyncio
    import random

    from queryeval.llm import AdaptiveLimiter, CallError, CallStats, RetryPolicy
    from queryeval.llm._calls import Retryable, with_retries

    def failing(*tries: Retryable):  # type: ignore[no-untyped-def]
        queue = list(tries)

        async def send() -> None:
            raise queue.pop(0)

        return send

    async def outcome(*tries: Retryable) -> CallError:
        policy = RetryPolicy(max_attempts=len(tries), backoff_base_s=0.001, backoff_max_s=0.001)
        with pytest.raises(CallError) as info:
            await with_retries(
                failing(*tries),
                policy=policy,
                limiter=AdaptiveLimiter(1),
                stats=CallStats(),
                rng=random.Random(0),
            )
        return info.value

    refused = Retryable("connection error: refused", connection=True)
    assert asyncio.run(outcome(refused, refused)).connection is True
    assert asyncio.run(outcome(refused, Retryable("HTTP 500", status=500))).connection is False
    assert asyncio.run(outcome(Retryable("timed out after 1s"), refused)).connection is False
