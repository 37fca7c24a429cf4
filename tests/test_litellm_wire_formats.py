"""The LiteLLM backend against local fakes of more wire formats it speaks (issue 35): Google
Gemini's `models/{model}:generateContent` and Azure OpenAI's deployment URL with its
api-version, each on 127.0.0.1. A 429 or a 500 then a reply is retried by queryeval's own
retry loop (LiteLLM retries nothing); a model system through each fake answers its cases, and
the recorded tokens and cost are those of the reply priced by `litellm.cost_per_token`."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from fakes.azure_openai_server import FakeAzureOpenAI
from fakes.gemini_server import FakeGemini
from queryeval.config import ChatEndpoint, import_litellm, load_suite
from queryeval.llm import ChatService
from reports_plugin import make_suite

try:  # not pytest.importorskip: a plain `import litellm` fetches its cost table online
    litellm = import_litellm()
except ImportError:
    pytest.skip("LiteLLM is not installed (the litellm extra)", allow_module_level=True)


def _priced(provider: str, prefer: str) -> str:
    """A chat model of `provider` that LiteLLM's cost table prices (`prefer` if it does),
    named without the provider prefix."""
    names = [
        name.split("/", 1)[1]
        for name, entry in litellm.model_cost.items()
        if entry.get("litellm_provider") == provider
        and entry.get("mode") == "chat"
        and name.startswith(f"{provider}/")
        and name.count("/") == 1
        and entry.get("input_cost_per_token")
        and entry.get("output_cost_per_token")
    ]
    return prefer if prefer in names else names[0]


# provider, the fake, its key variable (queryeval's default: <PROVIDER>_API_KEY), the model
PROVIDERS = {
    "gemini": (FakeGemini, "GEMINI_API_KEY", _priced("gemini", "gemini-2.5-flash")),
    "azure": (FakeAzureOpenAI, "AZURE_API_KEY", _priced("azure", "gpt-4o-mini")),
}


def _fake(provider: str, **kw: Any) -> Any:
    cls, _, model = PROVIDERS[provider]
    return cls(model=model, **kw) if cls is FakeAzureOpenAI else cls(**kw)


def _check_request(provider: str, request: dict[str, Any]) -> None:
    """The provider's own URL, key header and body shape (not the OpenAI-compatible one)."""
    _, _, model = PROVIDERS[provider]
    path, _, query = request["path"].partition("?")
    if provider == "gemini":
        assert path == f"/models/{model}:generateContent"
        assert request["headers"].get("x-goog-api-key") == "key-test"
        assert "messages" not in request["body"]
        assert request["body"]["contents"][-1]["role"] == "user"
    else:  # Azure: the deployment in the path, the api-version in the query, an api-key
        assert path == f"/openai/deployments/{model}/chat/completions"
        assert re.fullmatch(r"api-version=[\w.-]+", query)
        assert request["headers"].get("api-key") == "key-test"
        assert request["body"]["messages"][-1]["role"] == "user"


def _price(provider: str, prompt: int, completion: int) -> float:
    _, _, model = PROVIDERS[provider]
    return sum(litellm.cost_per_token(model=f"{provider}/{model}", prompt_tokens=prompt,
                                      completion_tokens=completion))  # fmt: skip


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("status", [429, 500])
def test_a_transient_error_then_a_reply_is_retried_and_priced(
    provider: str, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429 or a provider's HTTP 500 is transient: retried by queryeval's loop whatever
    exception class LiteLLM maps it to (through Azure, a 500 is `litellm.APIError`, not an
    APIStatusError); only the 429 counts as rate-limited."""
    _, key_env, model = PROVIDERS[provider]
    monkeypatch.setenv(key_env, "key-test")
    with _fake(provider, usage=(120, 30)) as server:
        server.script(status)
        config = ChatEndpoint.model_validate(
            {"model": model, "provider": provider, "base_url": server.base_url,
             "backoff_base_s": 0.01, "backoff_max_s": 0.05}
        )  # fmt: skip
        assert config.api_key_env == key_env
        service = ChatService(config)
        answer = asyncio.run(service.ask("k", [{"role": "user", "content": "hi"}]))
    assert answer.reply.text == "score: 0.8"
    assert answer.reply.usage == {"prompt_tokens": 120, "completion_tokens": 30}
    # two requests: queryeval retried the error itself (LiteLLM and the SDK under it: none)
    assert len(server.requests) == 2 and answer.attempts == 2
    assert service.client.stats.rate_limited == (1 if status == 429 else 0)
    expected = _price(provider, 120, 30)
    assert answer.reply.cost == pytest.approx(expected) and expected > 0
    for request in server.requests:
        _check_request(provider, request)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_model_system_through_each_wire_format(
    provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from queryeval.runner import run_suite

    _, key_env, model = PROVIDERS[provider]
    monkeypatch.setenv(key_env, "key-test")

    def answer(body: dict[str, Any]) -> str:  # right on even cases
        match = re.search(r"answer (\d+)", json.dumps(body))
        assert match is not None, body  # the case's question reached the provider
        n = int(match.group(1))
        return f"a{n}" if n % 2 == 0 else "no idea"

    with _fake(provider, text=answer, usage=(200, 10)) as server:
        suite_file = make_suite(tmp_path / "suite", n=2)
        text = suite_file.read_text().replace(
            "reports: [html, excel, junit, markdown, json]", "reports: [json]"
        )
        system = (
            f"  - name: {provider}\n    model:\n"
            f"      model: {model}\n      provider: {provider}\n"
            f"      base_url: {server.base_url}\n"
        )
        start, end = text.index("  - name: sys"), text.index("scorers:")
        suite_file.write_text(text[:start] + system + text[end:])
        suite = load_suite(suite_file)
        suite.settings.cache_dir = str(tmp_path / "cache")
        result = run_suite(suite, tmp_path / "run", progress=False)
    assert len(server.requests) == 2
    for request in server.requests:
        _check_request(provider, request)
    assert result.summary["systems"][provider]["pass_rate"] == pytest.approx(0.5)
    records = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").open()]
    price = _price(provider, 200, 10)
    assert len(records) == 2 and price > 0
    for r in records:
        n = int(r["case_id"].split("-")[1])
        (attempt,) = r["output"]["attempts"]
        assert attempt["answer"] == (f"a{n}" if n % 2 == 0 else "no idea")  # the reply read
        assert attempt["tokens_in"] == 200 and attempt["tokens_out"] == 10
        assert r["cost"] == pytest.approx(price)
        assert r["output"]["metadata"]["provider"] == provider
