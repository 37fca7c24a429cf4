"""Model and endpoint systems from a suite's `systems:` entries, and the checks `validate`
makes on them before anything runs (files named, templates, databases)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from queryeval.cases import Case, Output
from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig, SystemConfig
    from queryeval.scorers import ScoringContext


class LiveSystem(Protocol):
    """What the runner calls: a system that produces outputs itself (a callable, a model, an
    endpoint), owning its concurrency and timeouts."""

    async def generate(self, case: Case) -> Output:
        """The system's output for one case; never raises for the system's own failures."""
        ...


class SystemProblem(Exception):
    """A system entry of the suite that cannot be honoured: `key` names the entry's key."""

    def __init__(self, key: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def _check_file(suite: SuiteConfig, value: str, key: tuple[str | int, ...], what: str) -> None:
    if not suite.resolve(value).is_file():
        raise SystemProblem(key, f"{what} not found: {suite.resolve(value)}")


def check_systems(suite: SuiteConfig) -> None:
    """Every model and endpoint system of the suite can be honoured (the files it names,
    its templates, its databases); else an InputError at its line of the suite file."""
    for i, system in enumerate(suite.systems):
        try:
            check_system(suite, system)
        except SystemProblem as exc:
            where = f"systems[{i}]." + ".".join(str(k) for k in exc.key)
            raise suite.entry_error(("systems", i, *exc.key), exc.message, where=where) from None


def check_system(suite: SuiteConfig, config: SystemConfig) -> None:
    """SystemProblem (a key of the entry) or InputError (naming another file, e.g. a
    template's syntax error and its line) when the entry cannot be honoured."""
    from queryeval.systems._prompt import FEEDBACK_VARIABLES, load_prompt
    from queryeval.systems._schema import schema_file

    if config.database is not None and config.database not in suite.databases:
        known = ", ".join(suite.databases) or "none"
        raise SystemProblem(
            ("database",), f"unknown database {config.database!r} (the suite has: {known})"
        )
    if config.endpoint is not None:
        _check_body(config.endpoint.body)
        return
    if config.model is None:
        return
    if config.prompt is not None:
        _check_file(suite, config.prompt, ("prompt",), "prompt template")
        load_prompt(suite.resolve(config.prompt))
    if config.refine is not None:
        if config.refine.prompt is not None:
            _check_file(suite, config.refine.prompt, ("refine", "prompt"), "feedback template")
            load_prompt(suite.resolve(config.refine.prompt), FEEDBACK_VARIABLES)
        if not suite.databases:
            raise SystemProblem(
                ("refine",),
                "'refine' validates and executes each attempt on "
                "the case's database; the suite has no 'databases'",
            )
    if isinstance(config.tools, str):
        _check_file(suite, config.tools, ("tools",), "tools file")
    if config.schema_source is not None:
        path = schema_file(suite, config.schema_source)
        if path is not None and not path.is_file():
            raise SystemProblem(("schema",), f"schema file not found: {path}")
    examples = config.examples
    if examples is not None and examples.cases:
        from queryeval.cases import case_files

        if not list(case_files(examples.cases, suite.base_dir)):
            raise SystemProblem(("examples", "cases"), "no example cases matched")


def _check_body(body: object, key: tuple[str | int, ...] = ("endpoint", "body")) -> None:
    from jinja2 import TemplateSyntaxError

    from queryeval.systems._prompt import _environment

    if isinstance(body, str):
        try:
            _environment().parse(body)
        except TemplateSyntaxError as exc:
            raise SystemProblem(key, f"template error: {exc.message}") from None
    elif isinstance(body, dict):
        for name, value in body.items():
            _check_body(value, (*key, name))
    elif isinstance(body, list):
        for i, value in enumerate(body):
            _check_body(value, (*key, i))


def unreachable_error(suite: SuiteConfig, where: str, kind: str, why: str) -> InputError:
    """The error that stops a run whose live system cannot be reached at all (every call
    failed to connect), at the system's entry of the suite file: `where` is `systems[i]`,
    `kind` the entry's key (`model`, `endpoint`)."""
    index = int(where.removeprefix("systems[").rstrip("]"))
    key = "base_url" if kind == "model" else "url"
    return suite.entry_error(
        ("systems", index, kind, key),
        f"{why} (the finished cases are stored: run again with --resume)",
        where=f"{where}.{kind}.{key}",
    )


def build_system(
    suite: SuiteConfig, index: int, config: SystemConfig, cases: Sequence[Case] = ()
) -> LiveSystem:
    """The model or endpoint system of `suite.systems[index]` (not yet attached to a run)."""
    from queryeval.systems._endpoint import EndpointSystem
    from queryeval.systems._model import ModelSystem

    where = f"systems[{index}]"
    try:
        check_system(suite, config)
    except SystemProblem as exc:
        raise InputError(
            exc.message, path=suite.source, where=".".join([where, *map(str, exc.key)])
        ) from None
    if config.model is not None:
        return ModelSystem(config, suite, where=where, cases=cases)
    if config.endpoint is not None:
        return EndpointSystem(config, suite, where=where)
    raise ValueError(f"system {config.name!r} is neither a model nor an endpoint")


def attach_systems(systems: Sequence[object], ctx: ScoringContext, *, use_cache: bool) -> None:
    """Give live systems the run's context; InputError when one cannot be called at all (a
    missing API key): the run stops before anything is scored."""
    for system in systems:
        problem = getattr(system, "setup_problem", None)
        why = problem() if callable(problem) else None
        if why:
            suite = getattr(system, "suite", None)
            raise InputError(
                why, path=getattr(suite, "source", None), where=getattr(system, "where", None)
            )
        attach = getattr(system, "attach", None)
        if callable(attach):
            attach(ctx, use_cache=use_cache)
