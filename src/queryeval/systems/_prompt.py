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
                f"the template uses unknown variable(s) {', '.join(sorted(unknown))}; known: "
                f"{', '.join(sorted(variables))}",
                path=path or name,
            )

    @cached_property
    def hash(self) -> str:
        """Content hash of the template text."""
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()[:16]

    def render(self, variables: dict[str, Any]) -> list[dict[str, str]]:
        """Chat messages: the `system` block (when there is one) and the `user` block, or the
        whole template as the user message."""
        blocks = self._template.blocks
        if "user" not in blocks:
            return [{"role": "user", "content": self._template.render(variables).strip()}]
        context = self._template.new_context(dict(variables))
        messages = []
        for role in ("system", "user"):
            if role in blocks:
                text = "".join(blocks[role](context)).strip()
                if text:
                    messages.append({"role": role, "content": text})
        return messages

    def render_text(self, variables: dict[str, Any]) -> str:
        """The whole template as one text (feedback messages)."""
        return self._template.render(variables).strip()


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
