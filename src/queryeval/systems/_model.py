"""A model under test behind an OpenAI-compatible chat endpoint (`systems[].model`).

Per case: the prompt template is rendered (question, conversation, the schema rendered from
the case's engine, few-shot examples), the model is asked (`samples` independent times, or
in a refinement loop), and the output is read out of each reply. Every reply comes from the
on-disk cache when the same request (model, parameters, rendered messages, sample index) was
answered before, so a re-run calls nothing it has called already.

The system's failures are outputs (a reply without a query is an attempt without one, an
endpoint that fails for good is `Output.error`), scored as failures. What the evaluator set
up wrongly stops the run (exit 2): a missing API key, an endpoint that refuses the key
(401/403) or does not know the model (404), a spent `max_cost_usd`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from queryeval.cases import Attempt, Case, Finding, Output
from queryeval.errors import InputError
from queryeval.llm import (
    Answer,
    CallError,
    ChatService,
    Reply,
    ReplyCache,
    SpendCapReached,
    cache_bound,
    estimate_prompt_tokens,
    missing_key,
    request_key,
)
from queryeval.systems._build import unreachable_error
from queryeval.systems._examples import ExamplePool
from queryeval.systems._prompt import (
    FEEDBACK_VARIABLES,
    PromptTemplate,
    builtin_prompt,
    load_prompt,
)
from queryeval.systems._refine import check_query
from queryeval.systems._reply import read_output
from queryeval.systems._schema import SchemaSource
from queryeval.systems._task import CaseTask, case_task

if TYPE_CHECKING:
    from queryeval.config import ModelSpec, SuiteConfig, SystemConfig
    from queryeval.scorers import ScoringContext

PROMPT_VERSION = "1"  # bump when the code-side shaping of requests changes (a cache key part)
_FENCE_LANGUAGE = {"weaviate": "json", "sdmx": "json", "answer": "text"}
# HTTP statuses that say the evaluator's setup is wrong, not the system under test
_SETUP_STATUS = {
    401: "the endpoint refused the API key",
    403: "the endpoint refused access",
    404: "the endpoint does not know this model or path",
}


def _turns(case: Case) -> list[dict[str, str]]:
    """The conversation before the last user message, as {role, content}."""
    turns = [{"role": t.role, "content": t.content} for t in case.conversation]
    for i in range(len(turns) - 1, -1, -1):
        if turns[i]["role"] == "user":
            return turns[:i]
    return turns[:-1]


class ModelSystem:
    """A `model:` system: `await generate(case)` gives its Output. Build it with
    `build_systems`; the runner attaches its scoring context (engines, validators)."""

    kind = "model"

    def __init__(
        self,
        config: SystemConfig,
        suite: SuiteConfig,
        *,
        where: str,
        cases: Sequence[Case] = (),
    ) -> None:
        assert config.model is not None
        self.config = config
        self.suite = suite
        self.where = where
        self.spec: ModelSpec = config.model
        self.service = ChatService(self.spec, None, section=f"{where}.model")
        self.prompt = load_prompt(suite.resolve(config.prompt)) if config.prompt else None
        refine = config.refine
        self.feedback = (
            load_prompt(suite.resolve(refine.prompt), FEEDBACK_VARIABLES)
            if refine is not None and refine.prompt
            else builtin_prompt("feedback")
        )
        self.tools = _tools(config, suite)
        self.schemas = SchemaSource(suite, config)
        self.examples = (
            ExamplePool(suite, config, config.examples, _example_cases(config, suite, cases))
            if config.examples is not None
            else None
        )
        self.temperature = config.effective_temperature
        self.ctx: ScoringContext | None = None
        self.concurrency = self.spec.concurrency

    # --- set-up ------------------------------------------------------------------------------

    def attach(self, ctx: ScoringContext, *, use_cache: bool = True) -> None:
        """Use the run's context (engines, KG validators, shared executions) and open the
        output cache in its cache folder (unless `use_cache` is off, or the model's `cache`);
        the context closes this system with its other resources."""
        self.ctx = ctx
        if use_cache and self.spec.cache and self.service.cache is None:
            self.service.cache = ReplyCache(
                ctx.cache_dir / "systems" / "outputs.sqlite", cache_bound(self.suite.settings)
            )
        ctx.resource(f"system:{self.config.name}", lambda: self)

    def setup_problem(self) -> str | None:
        """Why this system cannot be called at all (a missing API key), else None."""
        return missing_key(self.spec, f"{self.where}.model")

    def probe(self, cases: Sequence[Case] = ()) -> str | None:
        """Why the model cannot be used, from one small request (`max_tokens: 1`, not
        cached): its server refuses every connection, the key (401/403), or does not know
        the model or path (404); None when the server answered (an error such as a 400 or
        a 5xx is the model's, not the configuration's). For `validate`."""
        why = self.setup_problem()
        if why is not None:
            return why

        async def ask() -> str | None:
            try:
                await self.service.client.complete(
                    [{"role": "user", "content": "Reply with OK."}], max_tokens=1
                )
            except CallError as exc:
                if exc.connection:
                    return f"cannot connect to {self.spec.endpoint} ({exc})"
                if exc.status in _SETUP_STATUS:
                    return f"{_SETUP_STATUS[exc.status or 0]} ({self.spec.endpoint}): {exc}"
            finally:
                await self.service.client.aclose()
            return None

        return asyncio.run(ask())

    def template(self, task: CaseTask) -> PromptTemplate:
        """The prompt template: the system's, else the shipped one of the task."""
        return self.prompt or builtin_prompt(task.task)

    def describe(self) -> dict[str, Any]:
        """What shapes this system's outputs, for run.json."""
        c = self.config
        out: dict[str, Any] = {
            "kind": self.kind,
            "model": self.spec.model,
            "endpoint": self.spec.endpoint,
            "temperature": self.temperature,
            "seed": self.spec.seed,
            "max_tokens": self.spec.max_tokens,
            "samples": c.samples,
            "prompt": (self.prompt.name + ":" + self.prompt.hash) if self.prompt else "builtin",
            "cache": self.service.cache is not None,
        }
        if c.refine is not None:
            out["refine"] = c.refine.model_dump(mode="json")
        if c.examples is not None:
            out["examples"] = c.examples.model_dump(mode="json")
        return out

    def run_stats(self) -> dict[str, Any]:
        """Calls, cache hits, tokens and cost of this run (this system's alone)."""
        stats = self.service.stats.as_dict()
        http = self.service.client.stats
        stats.update(calls=http.calls, retries=http.retries, rate_limited=http.rate_limited)
        if self.service.cache is not None:
            stats["cache"] = self.service.cache.stats()
        return stats

    # --- prompts (no calls) ---------------------------------------------------------------

    def variables(self, case: Case, task: CaseTask, schema: str) -> dict[str, Any]:
        """The template's variables for `case`."""
        dialect = task.task
        if task.is_query and task.database is not None and self.ctx is not None:
            dialect = self.ctx.engine(task.database).dialect
        return {
            "question": case.question,
            "conversation": _turns(case),
            "schema": schema,
            "task": task.task,
            "language": _FENCE_LANGUAGE.get(task.task, task.task),
            "dialect": dialect,
            "database": task.database or "",
            "examples": self.examples.for_case(case, task) if self.examples else [],
            "case_id": case.id,
            "tags": list(case.tags),
            "metadata": dict(case.metadata),
        }

    def render(
        self, case: Case, task: CaseTask | None = None
    ) -> tuple[CaseTask, list[dict[str, Any]]]:
        """(task, first messages) of `case` (blocking: the schema may start an engine)."""
        task = task or case_task(case, self.suite, self.config)
        schema = self.schemas.text(case, task, self.ctx)
        return task, self.template(task).render(self.variables(case, task, schema))

    def call_args(self, sample: int) -> dict[str, Any]:
        """The request parameters of sample `sample` (the seed moves with the sample, so
        that servers honouring seeds give independent samples)."""
        seed = self.spec.seed
        args: dict[str, Any] = {
            "temperature": self.temperature,
            "seed": None if seed is None else seed + sample,
            "max_tokens": self.spec.max_tokens,
        }
        if self.tools:
            args["tools"] = self.tools
            if self.config.tool_choice is not None:
                args["tool_choice"] = self.config.tool_choice
        return args

    def key(self, messages: list[dict[str, Any]], sample: int) -> str:
        """The cache key of one request: the deployment (endpoint and model: another server
        answering to the same name is another system), parameters, rendered messages,
        sample."""
        return request_key(
            endpoint=self.spec.endpoint,
            model=self.spec.model,
            params=self.call_args(sample),
            messages=messages,
            sample=sample,
            version=PROMPT_VERSION,
        )

    # --- generating ------------------------------------------------------------------------

    async def generate(self, case: Case) -> Output:
        """The system's output for `case`. Failures of the system are in the Output; set-up
        problems (InputError) stop the run."""
        start = time.perf_counter()
        try:
            if self.config.timeout_s is not None:
                output = await asyncio.wait_for(self._generate(case), self.config.timeout_s)
            else:
                output = await self._generate(case)
        except TimeoutError:
            output = Output(error=f"timed out after {self.config.timeout_s:g} s")
        if output.latency_s is None:
            output.latency_s = time.perf_counter() - start
        return output

    async def _generate(self, case: Case) -> Output:
        task, messages = await asyncio.to_thread(self.render, case)
        if self.config.refine is not None and task.is_query:
            return await self._refine(case, task, messages)
        n = self.config.samples
        results = await asyncio.gather(*(self._attempt(messages, i, task) for i in range(n)))
        attempts = [a for a, _ in results]
        errors = {e for _, e in results if e is not None}
        if errors and all(e is not None for _, e in results):
            return self._output([], task, error=sorted(errors)[0])
        output = self._output(attempts, task)
        if n > 1:
            output.metadata["attempts_are"] = "samples"
        return output

    def _output(self, attempts: list[Attempt], task: CaseTask, error: str | None = None) -> Output:
        costs = [a.cost for a in attempts if a.cost is not None]
        meta: dict[str, Any] = {"system": "model", "model": self.spec.model, "task": task.task}
        if self.spec.provider:  # LiteLLM's provider, for the GenAI spans (gen_ai.system)
            meta["provider"] = self.spec.provider
        cached = [bool(a.model_extra and a.model_extra.get("cached")) for a in attempts]
        if any(cached):
            meta["cached"] = sum(cached)
        return Output(
            attempts=attempts, error=error, cost=sum(costs) if costs else None, metadata=meta
        )

    async def _ask(self, messages: list[dict[str, Any]], sample: int) -> Answer:
        try:
            return await self.service.ask(
                self.key(messages, sample),
                messages,
                source=self.config.name,
                **self.call_args(sample),
            )
        except SpendCapReached as exc:
            raise InputError(
                f"{exc}; the cases finished are stored: raise the cap and run again with --resume",
                path=self.suite.source,
                where=f"{self.where}.model.max_cost_usd",
            ) from None
        except CallError as exc:
            unreachable = self.service.unreachable()
            if unreachable is not None:  # the configuration, not the model: stop the run
                raise unreachable_error(self.suite, self.where, "model", unreachable) from None
            if exc.status in _SETUP_STATUS or (exc.attempts == 0 and self.setup_problem()):
                why = _SETUP_STATUS.get(exc.status or 0, "")
                raise InputError(
                    f"{why}: {exc}".lstrip(": "),
                    path=self.suite.source,
                    where=f"{self.where}.model",
                ) from None
            raise

    async def _attempt(
        self, messages: list[dict[str, Any]], sample: int, task: CaseTask
    ) -> tuple[Attempt, str | None]:
        """One sample: (attempt, None), or (empty attempt, error) when the call failed."""
        try:
            answer = await self._ask(messages, sample)
        except CallError as exc:
            why = f"model call failed: {exc}"
            return Attempt.model_validate({"call_error": why}), why
        return self._read(answer, task), None

    def _read(self, answer: Answer, task: CaseTask) -> Attempt:
        reply = answer.reply
        read = read_output(reply.text, reply.tool_calls, task.task, self.config.reply)
        fields: dict[str, Any] = {
            "latency_s": reply.latency_s,
            "tokens_in": reply.usage.get("prompt_tokens"),
            "tokens_out": reply.usage.get("completion_tokens"),
            "cost": reply.cost,
        }
        if task.is_query:
            fields["language"] = task.task
        if read.value is not None:
            fields[task.field] = read.value
        else:
            fields["reply"] = reply.text
            fields["read_problem"] = read.problem
            if reply.finish_reason == "length":
                fields["read_problem"] = f"{read.problem} (the reply was cut at max_tokens)"
        if answer.cached:
            fields["cached"] = True
        try:
            return Attempt.model_validate(fields)
        except ValidationError as exc:  # e.g. a selection that is not one: unusable
            fields.pop(task.field, None)
            fields["reply"] = reply.text
            problem = str(exc).splitlines()
            fields["read_problem"] = f"the {task.field} is not in the expected form: " + (
                " ".join(problem[1:3]) if len(problem) > 2 else str(exc)
            )
            return Attempt.model_validate(fields)

    # --- the refinement loop -----------------------------------------------------------------

    async def _refine(self, case: Case, task: CaseTask, messages: list[dict[str, Any]]) -> Output:
        assert self.config.refine is not None
        spec = self.config.refine
        kinds = set(spec.feedback)
        attempts: list[Attempt] = []
        conversation = list(messages)
        note = None
        for iteration in range(1, spec.max_iterations + 1):
            try:
                answer = await self._ask(conversation, 0)
            except CallError as exc:
                if not attempts:
                    return self._output([], task, error=f"model call failed: {exc}")
                note = f"stopped at iteration {iteration}: model call failed: {exc}"
                break
            attempt = self._read(answer, task)
            query = attempt.query
            problems: list[Finding] = []
            if query is None:
                if "syntax" in kinds:
                    why = (attempt.model_extra or {}).get("read_problem") or "no query"
                    problems = [Finding(kind="syntax", message=str(why), score=0.0)]
            elif task.database is not None and self.ctx is not None:
                try:
                    checked = await asyncio.to_thread(
                        check_query, self.ctx, task.database, query, task.task, kinds
                    )
                except InputError:
                    raise
                except Exception as exc:  # the evaluator's checks broke: keep what was made
                    attempts.append(attempt)
                    note = f"stopped: the checks failed: {type(exc).__name__}: {exc}"
                    break
                attempt.findings = checked.findings
                attempt.execution = checked.execution
                problems = checked.problems(kinds)
            attempts.append(attempt)
            if not problems or iteration == spec.max_iterations:
                break
            feedback = self.feedback.render_text(
                {
                    "findings": [{"kind": f.kind, "message": f.message} for f in problems],
                    "query": query or "",
                    "language": _FENCE_LANGUAGE.get(task.task, task.task),
                    "iteration": iteration,
                    "max_iterations": spec.max_iterations,
                    "task": task.task,
                }
            )
            conversation = [
                *conversation,
                _assistant(answer.reply),
                {"role": "user", "content": feedback},
            ]
        output = self._output(attempts, task)
        output.metadata["attempts_are"] = "iterations"
        if task.database is None:
            output.metadata["refine"] = "no database for this case: nothing to check"
        if note:
            output.metadata["refine"] = note
        return output

    # --- estimates -----------------------------------------------------------------------------

    def first_requests(self, case: Case) -> list[tuple[str, list[dict[str, Any]]]]:
        """(key, messages) of the requests a case starts with (every sample; a loop's first
        iteration), without calling anything."""
        _, messages = self.render(case)
        n = 1 if self.config.refine is not None else self.config.samples
        return [(self.key(messages, i), messages) for i in range(n)]

    def prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        """Estimated prompt tokens of a request (chars/4)."""
        return estimate_prompt_tokens(messages)

    # --- lifecycle -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        await self.service.aclose()

    def close(self) -> None:
        """Close the cache and idle HTTP clients."""
        self.service.close()


def _assistant(reply: Reply) -> dict[str, Any]:
    """The model's previous reply as a message of the conversation (a tool call as its JSON
    arguments)."""
    text = reply.text
    if not text.strip() and reply.tool_calls:
        text = "\n".join(call.arguments for call in reply.tool_calls)
    return {"role": "assistant", "content": text}


def _tools(config: SystemConfig, suite: SuiteConfig) -> list[dict[str, Any]] | None:
    tools = config.tools
    if isinstance(tools, str):
        from queryeval._yaml import load_yaml

        data = load_yaml(suite.resolve(tools)).data
        tools = data.get("tools") if isinstance(data, dict) else data
        if not isinstance(tools, list):
            raise InputError(
                "expected a list of tool definitions (or {tools: [...]})",
                path=suite.resolve(str(config.tools)),
            )
    return list(tools) if tools else None


def _example_cases(
    config: SystemConfig, suite: SuiteConfig, cases: Sequence[Case]
) -> Sequence[Case]:
    spec = config.examples
    if spec is not None and spec.cases:
        from queryeval.cases import load_cases

        return load_cases(spec.cases, suite.base_dir)
    return cases
