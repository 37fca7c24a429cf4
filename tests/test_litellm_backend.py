"""The LiteLLM backend (`provider:` on a model system or the judge), offline against a
fake of Anthropic's Messages API on 127.0.0.1: the wire format LiteLLM speaks, retries on
429 and 5xx, the cost from LiteLLM's own cost table, the reply cache, the spend cap, a
model system end to end, and configuration errors with their file and line."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from fakes.anthropic_server import FakeAnthropic
from queryeval.config import ChatEndpoint, import_litellm, load_suite
from queryeval.llm import CallError, ChatService, ReplyCache, SpendCapReached
from reports_plugin import make_suite

try:  # not pytest.importorskip: a plain `import litellm` fetches its cost table online
    litellm = import_litellm()
except ImportError:
    pytest.skip("LiteLLM is not installed (the litellm extra)", allow_module_level=True)


def _claude() -> str:
    """An Anthropic chat model LiteLLM's cost table prices (read from the table)."""
    return next(
        name
        for name, entry in litellm.model_cost.items()
        if entry.get("litellm_provider") == "anthropic"
        and entry.get("mode") == "chat"
        and "/" not in name
        and entry.get("input_cost_per_token")
    )


def _config(server: FakeAnthropic, **kw: object) -> ChatEndpoint:
    return ChatEndpoint.model_validate(
        {"model": _claude(), "provider": "anthropic", "base_url": server.base_url,
         "backoff_base_s": 0.01, "backoff_max_s": 0.05, **kw}
    )  # fmt: skip


def _genai_systems(run_dir: Path) -> dict[str, set[str]]:
    """{span name: its `gen_ai.system` values} in the run's OTLP/JSON export."""
    from queryeval.exporters import otlp_json

    out: dict[str, set[str]] = {}
    text, _ = otlp_json(run_dir)
    for resource in json.loads(text)["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                attrs = {a["key"]: a["value"] for a in span.get("attributes", [])}
                for key in ("gen_ai.system", "gen_ai.provider.name"):
                    if key in attrs:
                        out.setdefault(span["name"], set()).add(attrs[key]["stringValue"])
    return out


def test_messages_api_retries_and_litellm_cost_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeAnthropic(usage=(120, 30)) as server:
        server.script(429, 529, 500)
        config = _config(server)
        assert config.api_key_env == "ANTHROPIC_API_KEY"  # the provider's key by default
        service = ChatService(config)
        answer = asyncio.run(service.ask("k", [{"role": "user", "content": "hi"}]))
    assert answer.reply.text == "score: 0.8"
    assert answer.reply.usage == {"prompt_tokens": 120, "completion_tokens": 30}
    assert answer.attempts == 4 and service.client.stats.rate_limited == 1
    # the cost from LiteLLM's maintained table, computed by LiteLLM itself
    expected = sum(litellm.cost_per_token(model=config.litellm_model, prompt_tokens=120,
                                          completion_tokens=30))  # fmt: skip
    assert answer.reply.cost == pytest.approx(expected) and expected > 0
    request = server.requests[-1]
    assert request["path"] == "/v1/messages"  # Anthropic's own API, no proxy
    assert request["headers"].get("x-api-key") == "sk-test"
    assert request["body"]["model"] == config.model
    (message,) = request["body"]["messages"]  # Anthropic's content blocks
    assert message["role"] == "user" and message["content"] in (
        "hi",
        [{"type": "text", "text": "hi"}],
    )


def test_cache_and_spend_cap_as_with_the_openai_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    messages = [{"role": "user", "content": "hi"}]
    with FakeAnthropic() as server:
        cache = ReplyCache(tmp_path / "cache.db")
        first = asyncio.run(ChatService(_config(server), cache).ask("key", messages))
        again = asyncio.run(ChatService(_config(server), cache).ask("key", messages))
        assert len(server.requests) == 1 and again.cached and again.reply.text == first.reply.text
        # a cap below the worst case of one call (LiteLLM's prices): refused, nothing sent
        capped = ChatService(_config(server, max_cost_usd=1e-7))
        with pytest.raises(SpendCapReached):
            asyncio.run(capped.ask("other", messages))
        assert len(server.requests) == 1
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(CallError, match="ANTHROPIC_API_KEY"):
        asyncio.run(ChatService(_config(server)).ask("third", messages))


def test_model_system_through_litellm_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from queryeval.runner import run_suite

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")

    def answer(body: dict) -> str:  # right on even cases
        n = int(re.search(r"answer (\d+)", json.dumps(body["messages"])).group(1))
        return f"a{n}" if n % 2 == 0 else "no idea"

    with FakeAnthropic(text=answer, usage=(200, 10)) as server:
        suite_file = make_suite(tmp_path / "suite", n=4)
        text = suite_file.read_text().replace(
            "reports: [html, excel, junit, markdown, json]", "reports: [json]"
        )
        model = (
            "  - name: claude\n    model:\n"
            f"      model: {_claude()}\n      provider: anthropic\n"
            f"      base_url: {server.base_url}\n"
        )
        start = text.index("  - name: sys")
        end = text.index("scorers:")
        suite_file.write_text(text[:start] + model + text[end:])
        suite = load_suite(suite_file)
        suite.settings.cache_dir = str(tmp_path / "cache")
        first = run_suite(suite, tmp_path / "run", progress=False)
        calls = len(server.requests)
        run_suite(suite, tmp_path / "again", progress=False)
        assert len(server.requests) == calls == 4  # the re-run is answered by the cache
    entry = first.summary["systems"]["claude"]
    assert entry["pass_rate"] == pytest.approx(0.5)
    records = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").open()]
    price = sum(litellm.cost_per_token(model=f"anthropic/{_claude()}", prompt_tokens=200,
                                       completion_tokens=10))  # fmt: skip
    for r in records:
        (attempt,) = r["output"]["attempts"]
        assert attempt["tokens_in"] == 200 and attempt["tokens_out"] == 10
        assert r["cost"] == pytest.approx(price)
        assert r["output"]["metadata"]["provider"] == "anthropic"
    # a plain model name: the spans name the provider recorded, not openai
    assert _genai_systems(tmp_path / "run") == {"system_call": {"anthropic"}}


SYSTEM = "systems:\n  - {name: saved, predictions: p.jsonl}\nscorers: [llm_answer_correctness]\n"


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (SYSTEM + "judge:\n  model: m\n  provider: antrhopic\n", "unknown provider 'antrhopic'"),
        (SYSTEM + "judge:\n  model: m\n  provider: anthropic\n  max_cost_usd: 1\n", "LiteLLM's"),
        (
            f"systems:\n  - name: s\n    model: {{model: {_claude()}, provider: anthropic}}\n"
            "scorers: [exact_match]\n",
            "ANTHROPIC_API_KEY",
        ),
        (
            "systems:\n  - name: s\n    model: {model: m, provider: nope}\n",
            "unknown provider 'nope'",
        ),
    ],
)
def test_config_errors_exit_2_with_file_and_line(
    tmp_path: Path, block: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from queryeval.cli._app import app

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "1", "conversation": [{"content": "q", "target": {"answer": "a"}}]}\n'
    )
    (tmp_path / "p.jsonl").write_text('{"case_id": "1", "answer": "a"}\n')
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: x\ncases: cases.jsonl\n" + block)
    result = CliRunner().invoke(app, ["run", str(suite), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    # the file and line; a missing key names the file and the system (as for any endpoint)
    place = r"suite\.yaml: systems\[0\]" if "KEY" in expected else r"suite\.yaml:\d+"
    assert expected in result.output and re.search(place, result.output), result.output


def _judged_suite(tmp_path: Path, server: FakeAnthropic) -> Path:
    """Saved predictions (one case of three not generated) judged by `provider: anthropic`."""
    cases = [
        {"id": str(i), "conversation": [{"content": f"q{i}?", "target": {"answer": "Paris"}}]}
        for i in range(3)
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "p.jsonl").write_text(
        "".join(json.dumps({"case_id": str(i), "answer": f"answer {i}"}) + "\n" for i in range(2))
    )
    suite = {
        "name": "judged",
        "cases": "cases.jsonl",
        "systems": [{"name": "saved", "predictions": "p.jsonl"}],
        "scorers": ["llm_answer_correctness"],
        "reports": ["json"],
        "judge": {"model": _claude(), "provider": "anthropic", "base_url": server.base_url,
                  "estimate_output_tokens": 50},
    }  # fmt: skip
    (tmp_path / "suite.yaml").write_text(json.dumps(suite))
    return tmp_path / "suite.yaml"


def test_judge_through_litellm_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge on Anthropic's API: the verdict read from the reply, the cost from LiteLLM's
    table, the provider recorded for the spans, a re-run answered by the cache."""
    from queryeval.runner import run_suite

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeAnthropic(usage=(300, 40)) as server:
        suite = load_suite(_judged_suite(tmp_path, server))
        suite.settings.cache_dir = str(tmp_path / "cache")
        run_suite(suite, tmp_path / "run", progress=False)
        calls = len(server.requests)
        run_suite(suite, tmp_path / "again", progress=False)
        assert calls == 2 and len(server.requests) == calls  # the re-run: 0 new calls
    assert all(r["path"] == "/v1/messages" for r in server.requests)
    price = sum(litellm.cost_per_token(model=f"anthropic/{_claude()}", prompt_tokens=300,
                                       completion_tokens=40))  # fmt: skip
    for run, cached in (("run", False), ("again", True)):
        records = {
            r["case_id"]: r for r in map(json.loads, (tmp_path / run / "results.jsonl").open())
        }
        for case in ("0", "1"):
            score = records[case]["scores"]["llm_answer_correctness"]
            judge = score["details"]["judge"]
            assert score["value"] == pytest.approx(0.8) and judge["status"] == "ok"
            assert judge["cost_usd"] == pytest.approx(price) and price > 0
            assert judge["usage"] == {"prompt_tokens": 300, "completion_tokens": 40}
            assert judge["cached"] is cached and judge["provider"] == "anthropic"
    assert _genai_systems(tmp_path / "run")["judge"] == {"anthropic"}


def test_estimate_prices_a_litellm_system_and_judge_from_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`queryeval estimate` with a LiteLLM model system and judge: calls, tokens and cost
    (LiteLLM's prices) as on the OpenAI-compatible path, and nothing sent."""
    from typer.testing import CliRunner

    from queryeval.cli._app import app

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    entry = litellm.model_cost[_claude()]  # LiteLLM's prices, USD per token
    cost_in, cost_out = entry["input_cost_per_token"], entry["output_cost_per_token"]
    outputs = []
    with FakeAnthropic() as server:
        path = _judged_suite(tmp_path, server)
        suite = json.loads(path.read_text())
        suite["systems"].append({"name": "claude", "model": {
            "model": _claude(), "provider": "anthropic", "base_url": server.base_url,
            "estimate_output_tokens": 100}})  # fmt: skip
        path.write_text(json.dumps(suite))
        # the same suite on the OpenAI-compatible path, priced by hand at LiteLLM's prices
        price = {_claude(): {"input_per_1k": cost_in * 1000, "output_per_1k": cost_out * 1000}}
        for section in (suite["judge"], suite["systems"][1]["model"]):
            section.pop("provider")
            section.update(prices=price, api_key_env=None)
        plain = tmp_path / "plain.yaml"
        plain.write_text(json.dumps(suite))
        for suite_file in (path, plain):
            result = CliRunner().invoke(app, ["estimate", str(suite_file)])
            assert result.exit_code == 0, result.output
            outputs.append(result.output)
        assert server.requests == []  # estimating sends nothing
    assert outputs[0] == outputs[1]  # calls, tokens, cost: as on the OpenAI path
    system, judge = outputs[0].splitlines()[:2]
    assert system.startswith(f"system claude ({_claude()}): 3 call(s) to make (0 of 3 ")
    assert judge.startswith(f"judge {_claude()}: 6 call(s) to make (0 of 6 ")
    for line, completion in ((system, 300), (judge, 6 * 50)):
        tokens = int(line.split("~")[1].split(" prompt")[0].replace(",", ""))
        assert f"~{completion} completion" in line and tokens > 0
        cost = float(line.split("est. $")[1].split(" ")[0])
        assert cost == pytest.approx(tokens * cost_in + completion * cost_out, abs=1e-4)
