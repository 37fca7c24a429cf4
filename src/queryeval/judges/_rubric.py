"""Rubrics as data: a YAML file with Jinja2 templates, the inputs it expects and its scale.

Templates are rendered in Jinja2's sandbox (a suite may bring its own rubric) with
StrictUndefined; every input reaches the template already fenced (see `_fence`).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache, cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from queryeval._validation import input_error
from queryeval._yaml import load_yaml
from queryeval.errors import InputError
from queryeval.judges._fence import fence, make_nonce, preamble

# Bump when the code-side prompt (preamble, reply format) changes: it is part of the hash.
PROMPT_VERSION = "1"

_EXTRA_VARIABLES = {"nonce", "scale_min", "scale_max"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RubricInput(_Model):
    """One input of a rubric; an optional one renders `default` when missing or empty."""

    description: str = ""
    required: bool = True
    default: str = ""


class Scale(_Model):
    """The range of scores; `points` lists the anchors the rubric describes (informative)."""

    min: float = 0.0
    max: float = 1.0
    points: list[float] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ordered(self) -> Scale:
        if self.min >= self.max:
            raise ValueError("scale.min must be below scale.max")
        return self


class Rubric(_Model):
    """A judging instruction: system and user templates over named, fenced inputs."""

    name: str
    version: str = "1"
    description: str = ""
    inputs: dict[str, RubricInput]
    scale: Scale = Field(default_factory=Scale)
    system: str
    user: str

    @model_validator(mode="before")
    @classmethod
    def _inputs_as_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("inputs"), list):
            data = {**data, "inputs": {name: {} for name in data["inputs"]}}
        return data

    @model_validator(mode="after")
    def _templates_use_declared_inputs(self) -> Rubric:
        from jinja2 import TemplateSyntaxError, meta

        env = _environment()
        for part in ("system", "user"):
            try:
                used = meta.find_undeclared_variables(env.parse(getattr(self, part)))
            except TemplateSyntaxError as exc:
                raise ValueError(
                    f"{part}: template error at line {exc.lineno}: {exc.message}"
                ) from None
            unknown = used - set(self.inputs) - _EXTRA_VARIABLES
            if unknown:
                raise ValueError(
                    f"{part}: template uses undeclared input(s) {', '.join(sorted(unknown))}; "
                    f"declared: {', '.join(self.inputs)}"
                )
        return self

    @cached_property
    def hash(self) -> str:
        """Content hash of everything that shapes the prompt (a changed rubric misses the cache)."""
        body = self.model_dump(mode="json")
        body["prompt_version"] = PROMPT_VERSION
        text = json.dumps(body, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def normalise(self, inputs: dict[str, Any]) -> dict[str, str]:
        """The declared inputs as text; a missing required input is a ValueError."""
        out: dict[str, str] = {}
        for name, spec in self.inputs.items():
            text = _as_text(inputs.get(name))
            if not text.strip():
                if spec.required:
                    raise ValueError(f"rubric {self.name!r} needs input {name!r}")
                text = spec.default
            out[name] = text
        return out

    def render(self, inputs: dict[str, str]) -> list[dict[str, str]]:
        """Chat messages for normalised inputs: the system prompt (rubric, fencing rule,
        reply format) and the user prompt with every input fenced."""
        nonce = make_nonce(self.hash, *(f"{k}={v}" for k, v in sorted(inputs.items())))
        variables: dict[str, Any] = {k: fence(k, v, nonce) for k, v in inputs.items()}
        variables.update(
            nonce=nonce, scale_min=_num(self.scale.min), scale_max=_num(self.scale.max)
        )
        system = _template(self.system).render(variables).strip()
        user = _template(self.user).render(variables).strip()
        reply_format = (
            'Reply with one JSON object and nothing else: {"reasoning": "<a short paragraph>", '
            f'"score": <a number from {_num(self.scale.min)} to {_num(self.scale.max)}>}}.'
        )
        return [
            {"role": "system", "content": f"{system}\n\n{preamble(nonce)}\n\n{reply_format}"},
            {"role": "user", "content": user},
        ]


@cache
def _environment() -> Any:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=False)


@lru_cache(maxsize=256)
def _template(source: str) -> Any:
    """A compiled template (compiling costs far more than rendering)."""
    return _environment().from_string(source)


def _num(x: float) -> str:
    return f"{x:g}"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def load_rubric(path: str | Path) -> Rubric:
    """A rubric from a YAML file; problems are InputErrors naming the file and line."""
    path = Path(path)
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise InputError("expected a rubric (a mapping with name, inputs, system, user)", path=path)
    try:
        return Rubric.model_validate(doc.data)
    except ValidationError as exc:
        raise input_error(exc, path=path, located=doc) from None


def builtin_rubric_names() -> list[str]:
    """Names of the rubrics shipped with queryeval."""
    folder = resources.files("queryeval.judges") / "rubrics"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


@cache
def builtin_rubric(name: str) -> Rubric:
    """A rubric shipped in `queryeval/judges/rubrics/NAME.yaml` (KeyError if none)."""
    if name not in builtin_rubric_names():
        raise KeyError(name)
    with resources.as_file(resources.files("queryeval.judges") / "rubrics" / f"{name}.yaml") as p:
        return load_rubric(p)
