"""Prompt templates of model systems: Jinja files, rendered in Jinja's sandbox with
StrictUndefined (as the judge's rubrics).

A template's blocks `system` and `user` become the two chat messages; a template without a
`user` block is the user message as a whole. Variables:

- `question`: the case's last user message; `conversation`: the turns before it, each
  `{role, content}`;
- `schema`: the database's schema rendered from its engine (SQL DDL, KQL tables, graph
  schema), the Weaviate collections, or the SDMX codelists; `""` when there is none;
- `task` (`sql`, `kql`, `cypher`, `weaviate`, `sdmx`, `answer`), `language` (of the fence),
  `dialect` (the engine's: `duckdb`, `sqlite`, `postgresql` ...), `database` (its name);
- `examples`: few-shot examples, each `{question, output}`;
- `case_id`, `tags`, `metadata`: the case's.

The feedback message of the refinement loop is a template too, over `findings` (each
`{kind, message}`), `query`, `language`, `iteration` and `max_iterations`.
"""

from __future__ import annotations

import hashlib
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from queryeval.errors import InputError

PROMPT_VARIABLES = frozenset(
    {
        "question",
        "conversation",
        "schema",
        "task",
        "language",
        "dialect",
        "database",
        "examples",
        "case_id",
        "tags",
        "metadata",
    }
)
FEEDBACK_VARIABLES = frozenset(
    {"findings", "query", "language", "iteration", "max_iterations", "task"}
)


@cache
def _environment() -> Any:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        undefined=StrictUndefined, keep_trailing_newline=False, trim_blocks=True, lstrip_blocks=True
    )


class PromptTemplate:
    """A compiled prompt template; `hash` changes whenever its text does (a cache key part)."""

    def __init__(
        self,
        source: str,
        name: str,
        variables: frozenset[str] = PROMPT_VARIABLES,
        path: Path | None = None,
    ) -> None:
        from jinja2 import TemplateSyntaxError, meta

        self.source = source
        self.name = name
        self.path = path
        env = _environment()
        try:
            parsed = env.parse(source)
            self._template = env.from_string(source)
        except TemplateSyntaxError as exc:
            raise InputError(
                f"template error: {exc.message}", path=path or name, line=exc.lineno
            ) from None
        unknown = meta.find_undeclared_variables(parsed) - variables
        if unknown:
            raise InputError(
                f"the template uses unknown variable(s) {', '.join(sorted(unknown))}"
                f"{_did_you_mean(unknown, variables)}; known: {', '.join(sorted(variables))}",
                path=path or name,
                line=_first_use(parsed, unknown),
            )

    @cached_property
    def hash(self) -> str:
        """Content hash of the template text."""
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()[:16]

    def render(self, variables: dict[str, Any]) -> list[dict[str, str]]:
        """Chat messages: the `system` block (when there is one) and the `user` block, or the
        whole template as the user message."""
        from jinja2 import TemplateError

        blocks = self._template.blocks
        if "user" not in blocks:
            return [{"role": "user", "content": self.render_text(variables)}]
        context = self._template.new_context(dict(variables))
        messages = []
        for role in ("system", "user"):
            if role in blocks:
                try:
                    text = "".join(blocks[role](context)).strip()
                except TemplateError as exc:  # a block's frames are the compiled code's
                    line = _template_line(exc)
                    raise self._error(
                        exc, variables, self._template.get_corresponding_lineno(line or 0)
                    ) from None
                if text:
                    messages.append({"role": role, "content": text})
        return messages

    def render_text(self, variables: dict[str, Any]) -> str:
        """The whole template as one text (feedback messages)."""
        from jinja2 import TemplateError

        try:
            return self._template.render(variables).strip()
        except TemplateError as exc:  # Jinja has put the template's own lines in the frames
            raise self._error(exc, variables, _template_line(exc)) from None

    def _error(self, exc: Exception, variables: dict[str, Any], line: int | None) -> InputError:
        """A template that cannot be rendered: the file, the line and the case."""
        case = variables.get("case_id")
        where = f" for case {case!r}" if case is not None else ""
        return InputError(
            f"template error{where}: {exc}", path=self.path or self.name, line=line or None
        )


def _first_use(parsed: Any, names: set[str]) -> int | None:
    """The first line that reads one of `names`."""
    from jinja2 import nodes

    lines = [n.lineno for n in parsed.find_all(nodes.Name) if n.ctx == "load" and n.name in names]
    return min(lines, default=None)


def _did_you_mean(unknown: set[str], known: frozenset[str]) -> str:
    """` (did you mean 'question'?)` for a near miss of a known name, else ``."""
    import difflib

    near = [m for u in sorted(unknown) for m in difflib.get_close_matches(u, known, n=1)]
    return f" (did you mean {', '.join(repr(m) for m in near)}?)" if near else ""


def _template_line(exc: BaseException) -> int | None:
    """The line of the innermost template frame of the traceback (None: not found)."""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def load_prompt(path: Path, variables: frozenset[str] = PROMPT_VARIABLES) -> PromptTemplate:
    """A template from a file; InputError naming the file (and line) when it cannot be used."""
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the prompt template ({exc.strerror})", path=path) from None
    return PromptTemplate(source, path.name, variables, path)


@cache
def builtin_prompt(name: str) -> PromptTemplate:
    """A template shipped in `queryeval/systems/prompts/NAME.j2` (one per task, `feedback`)."""
    folder = resources.files("queryeval.systems") / "prompts"
    source = (folder / f"{name}.j2").read_text(encoding="utf-8")
    variables = FEEDBACK_VARIABLES if name == "feedback" else PROMPT_VARIABLES
    return PromptTemplate(source, f"{name}.j2", variables)
