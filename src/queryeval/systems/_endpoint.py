"""A deployed service under test (`systems[].endpoint`): the case is sent as a JSON body built
from a template, and the output is read from the reply at a configured path.

Retries, Retry-After, backoff and the adaptive concurrency limit are those of the model
systems (`queryeval.llm`). A service is not cached: it is what is being measured, and it may
change between runs. Its failures (5xx after the retries, a timeout, a reply without the
output) are the system's; a refused key (401/403) or a wrong URL (404/405) stops the run.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from queryeval.cases import Attempt, Case, Output
from queryeval.errors import InputError
from queryeval.systems._build import unreachable_error
from queryeval.systems._predictions import parse_output
from queryeval.systems._reply import read_output
from queryeval.systems._task import CaseTask, case_task

if TYPE_CHECKING:
    from queryeval.config import EndpointSpec, SuiteConfig, SystemConfig
    from queryeval.scorers import ScoringContext

_WHOLE = re.compile(r"^\s*\{\{\s*([A-Za-z_]\w*)\s*\}\}\s*$")
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_SETUP_STATUS = {
    401: "the service refused the credentials",
    403: "the service refused access",
    404: "no such URL on the service",
    405: "the URL does not take this method",
}
_ATTEMPT_KEYS = frozenset(
    {"query", "answer", "weaviate_query", "indicator_selection", "attempts", "output", "error"}
)


def render_body(template: Any, variables: dict[str, Any]) -> Any:
    """The JSON body: every string of `template` rendered with Jinja (sandboxed); a string
    that is only `{{ name }}` gives the variable's value itself (a list stays a list).

    >>> render_body({"q": "{{ question }}", "n": 3, "h": ["{{ turns }}"]},
    ...             {"question": "Why?", "turns": [1, 2]})
    {'q': 'Why?', 'n': 3, 'h': [[1, 2]]}
    """
    if isinstance(template, str):
        whole = _WHOLE.match(template)
        if whole and whole.group(1) in variables:
            return variables[whole.group(1)]
        from queryeval.systems._prompt import _environment

        return _environment().from_string(template).render(variables)
    if isinstance(template, dict):
        return {key: render_body(value, variables) for key, value in template.items()}
    if isinstance(template, list):
        return [render_body(value, variables) for value in template]
    return template


def read_path(data: Any, path: str) -> Any:
    """The value at `path` (`a.b[0].c`; a leading `$.` is allowed; empty: all of it).
    KeyError when the reply has nothing there.

    >>> read_path({"choices": [{"text": "SELECT 1"}]}, "choices[0].text")
    'SELECT 1'
    """
    path = path.strip()
    if path.startswith("$"):
        path = path[1:].lstrip(".")
    value = data
    for name, index in _PATH_PART.findall(path):
        if name:
            if not isinstance(value, dict) or name not in value:
                raise KeyError(name)
            value = value[name]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                raise KeyError(f"[{index}]")
            value = value[int(index)]
    return value


class EndpointSystem:
    """An `endpoint:` system: `await generate(case)` posts the case and reads the output."""

    kind = "endpoint"

    def __init__(self, config: SystemConfig, suite: SuiteConfig, *, where: str) -> None:
        assert config.endpoint is not None
        self.config = config
        self.suite = suite
        self.where = where
        self.spec: EndpointSpec = config.endpoint
        spec = self.spec
        self.concurrency = spec.concurrency or config.concurrency
        from queryeval.llm import JsonClient, RetryPolicy  # asyncio and HTTP: only when used

        headers = dict(spec.headers)
        if spec.api_key_env and os.environ.get(spec.api_key_env):
            headers["Authorization"] = f"Bearer {os.environ[spec.api_key_env]}"
        self.client = JsonClient(
            spec.url,
            method=spec.method,
            headers=headers,
            timeout_s=spec.timeout_s,
            concurrency=self.concurrency,
            policy=RetryPolicy(
                max_attempts=spec.max_attempts,
                max_rate_limited=spec.max_rate_limited,
                backoff_base_s=spec.backoff_base_s,
                backoff_max_s=spec.backoff_max_s,
                max_retry_after_s=spec.max_retry_after_s,
            ),
        )
        self.ctx: ScoringContext | None = None
        self._reached = False  # some request of this run reached the service
        # requests failed for good with every try refused at connection: while none has
        # reached the service, one such request stops the run (a wrong URL, nothing running)
        self._refused = 0

    def attach(self, ctx: ScoringContext, *, use_cache: bool = True) -> None:
        """The context closes this system with its other resources."""
        self.ctx = ctx
        ctx.resource(f"system:{self.config.name}", lambda: self)

    def setup_problem(self) -> str | None:
        """Why the service cannot be called at all (its key variable unset), else None."""
        env = self.spec.api_key_env
        if env and not os.environ.get(env):
            return f"environment variable {env} ({self.where}.endpoint.api_key_env) is not set"
        return None

    def probe(self, cases: Sequence[Case] = (), tries: int = 3) -> str | None:
        """Why the service cannot be used, from its replies to the first `tries` cases: it
        refuses every connection, the credentials (401/403), the URL or method (404/405),
        or `output:` resolves on none of its replies; None when it answered one as
        configured. For `validate` (the service is called: up to `tries` requests)."""
        why = self.setup_problem()
        if why is not None:
            return why
        from queryeval.llm import CallError

        async def ask() -> str | None:
            problem = None
            try:
                chosen: list[Case | None] = [*list(cases)[:tries]] or [None]
                for case in chosen:
                    variables = (
                        self.variables(case, case_task(case, self.suite, self.config))
                        if case is not None
                        else {"question": "ping", "conversation": [], "case_id": ""}
                    )
                    try:
                        reply, _ = await self.client.send(render_body(self.spec.body, variables))
                    except CallError as exc:
                        if exc.connection:
                            return f"cannot connect to {self.spec.url} ({exc})"
                        if exc.status in _SETUP_STATUS:
                            return f"{_SETUP_STATUS[exc.status or 0]} ({self.spec.url}): {exc}"
                        return None  # reached: its errors are the system's
                    problem = self._path_problem(reply.text, case.id if case else "")
                    if problem is None:
                        return None
            finally:
                await self.client.aclose()
            return problem

        import asyncio  # lazily: a run of saved predictions runs no event loop

        return asyncio.run(ask())

    def _path_problem(self, text: str, case_id: str) -> str | None:
        """Why `output:` does not resolve on a reply (None when it does, or is empty)."""
        if not self.spec.output:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return f"the reply to case {case_id} is not JSON: {text[:200]!r}"
        try:
            read_path(data, self.spec.output)
        except KeyError as exc:
            return (
                f"output: {self.spec.output!r} is not in the service's replies (missing {exc}; "
                f"the reply to case {case_id}: {_excerpt(data)})"
            )
        return None

    def describe(self) -> dict[str, Any]:
        """The service and how it is asked, for run.json."""
        return {
            "kind": self.kind,
            "url": self.spec.url,
            "method": self.spec.method,
            "output": self.spec.output,
            "cache": False,
        }

    def run_stats(self) -> dict[str, Any]:
        """HTTP calls, retries and 429s of this run."""
        s = self.client.stats
        return {"calls": s.calls, "retries": s.retries, "rate_limited": s.rate_limited}

    def variables(self, case: Case, task: CaseTask) -> dict[str, Any]:
        """What a body template may use."""
        turns = [{"role": t.role, "content": t.content} for t in case.conversation]
        return {
            "question": case.question,
            "conversation": turns,
            "case_id": case.id,
            "tags": list(case.tags),
            "metadata": dict(case.metadata),
            "task": task.task,
            "database": task.database or "",
        }

    async def generate(self, case: Case) -> Output:
        """The service's output for `case`; its failures are in the Output."""
        start = time.perf_counter()
        task = case_task(case, self.suite, self.config)
        body = render_body(self.spec.body, self.variables(case, task))
        from queryeval.llm import CallError

        try:
            reply, _ = await self.client.send(body)
        except CallError as exc:
            self._refused = self._refused + 1 if exc.connection else self._refused
            self._reached = self._reached or not exc.connection
            if not self._reached and self._refused:
                why = (
                    f"cannot connect to {self.spec.url}: no request reached the service "
                    f"({exc}); is it running there?"
                )
                raise unreachable_error(self.suite, self.where, "endpoint", why) from None
            if exc.status in _SETUP_STATUS:
                raise InputError(
                    f"{_SETUP_STATUS[exc.status or 0]}: {exc}",
                    path=self.suite.source,
                    where=f"{self.where}.endpoint",
                ) from None
            output = Output(error=f"service call failed: {exc}")
        else:
            self._reached = True
            output = self._read(reply.text, task)
        output.latency_s = time.perf_counter() - start
        output.metadata.setdefault("system", "endpoint")
        return output

    def _read(self, text: str, task: CaseTask) -> Output:
        try:
            data: Any = json.loads(text)
        except ValueError:
            if self.spec.output:
                return _invalid(f"the reply is not JSON: {text[:200]!r}")
            data = text
        try:
            value = read_path(data, self.spec.output) if self.spec.output else data
        except KeyError as exc:
            return _invalid(
                f"the reply has no {self.spec.output!r} (output: {self.spec.output}; missing "
                f"{exc}; the reply: {_excerpt(data)})"
            )
        if (
            isinstance(value, dict)
            and task.task not in ("weaviate",)
            and _ATTEMPT_KEYS.intersection(value)
        ):
            try:
                return parse_output(value)
            except (ValidationError, ValueError) as exc:
                return _invalid(f"unusable output: {exc}".splitlines()[0])
        if isinstance(value, str):
            read = read_output(value, [], task.task, self.config.reply)
            value = read.value
            if value is None:
                return Output(
                    attempts=[_attempt({"reply": text[:2000], "read_problem": read.problem})]
                )
        elif task.task in ("sql", "kql", "cypher", "answer"):
            return _invalid(
                f"expected text at {self.spec.output or 'the reply'}, got {type(value).__name__}"
            )
        fields: dict[str, Any] = {task.field: value}
        if task.is_query:
            fields["language"] = task.task
        try:
            return Output(attempts=[_attempt(fields)])
        except ValidationError as exc:
            return _invalid(f"unusable output: {exc}".splitlines()[0])

    async def aclose(self) -> None:
        """Close the connection pool of the running loop."""
        await self.client.aclose()

    def close(self) -> None:
        """Forget idle pools."""
        self.client.close()


def _attempt(fields: dict[str, Any]) -> Attempt:
    return Attempt.model_validate(fields)


def _invalid(why: str) -> Output:
    """A reply the output cannot be read from: the system's failure, named as such."""
    return Output(error=why, failure="invalid_output")


def _excerpt(data: Any) -> str:
    """The start of a reply, as JSON (what the `output:` path is checked against)."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:200] + "..."
