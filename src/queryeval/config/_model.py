"""The suite configuration: cases, databases, systems, scorers, gates, reports."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def duplicates(names: Iterable[str]) -> list[str]:
    """The names that occur more than once, sorted."""
    return sorted(name for name, n in Counter(names).items() if n > 1)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatabaseConfig(_Model):
    """A named database: an engine and where it lives (embedded by default)."""

    model_config = ConfigDict(extra="allow")

    engine: str
    path: str | None = None
    url: str | None = None
    fixture: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class SystemConfig(_Model):
    """A system under test: saved predictions, a Python callable, or an HTTP endpoint."""

    name: str
    predictions: str | None = None
    callable: str | None = None
    endpoint: str | None = None
    params: dict[str, Any] | list[dict[str, Any]] | None = None
    concurrency: int = Field(default=4, ge=1, le=1024)
    timeout_s: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _exactly_one_source(self) -> SystemConfig:
        given = [k for k in ("predictions", "callable", "endpoint") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(
                "a system needs exactly one of 'predictions', 'callable' or 'endpoint'"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.params is not None and not self.callable:
            raise ValueError("'params' applies only to a 'callable' system")
        return self

    def configurations(self) -> list[tuple[str, dict[str, Any]]]:
        """(name, params) for each grid point: the cartesian product of a mapping of lists,
        or an explicit list of mappings. A system without params is one configuration."""
        if self.params is None:
            return [(self.name, {})]
        if isinstance(self.params, list):
            points = [dict(p) for p in self.params]
        else:
            keys = list(self.params)
            values = [v if isinstance(v, list) else [v] for v in self.params.values()]
            points = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
        return [(f"{self.name}[{_label(p)}]", p) for p in points]


def _label(params: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in params.items())


class ScorerConfig(_Model):
    """A scorer by registered name, with its options, weight and gate role."""

    name: str
    id: str | None = Field(default=None, description="label in results; defaults to name")
    options: dict[str, Any] = Field(default_factory=dict)
    weight: float = Field(default=1.0, ge=0)
    required: bool = False
    threshold: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @property
    def label(self) -> str:
        """The key under which this scorer's scores are stored."""
        return self.id or self.name


class ReportConfig(_Model):
    """A report to write after a run."""

    kind: str
    path: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"kind": data} if isinstance(data, str) else data


class BaselineConfig(_Model):
    """A stored run to compare with: baseline-relative gates and the comparison report."""

    run: str = Field(description="the baseline run directory, relative to the suite file")
    alpha: float = Field(default=0.05, gt=0, lt=1, description="significance level")
    systems: list[str] = Field(default_factory=list, description="pairs 'A=B' or shared names")
    metrics: list[str] = Field(default_factory=list, description="the first decides the verdict")

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"run": data} if isinstance(data, str) else data


class SuiteConfig(_Model):
    """A whole evaluation suite, as written in YAML."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    preset: str | None = None
    cases: str | list[str]
    databases: dict[str, DatabaseConfig] = Field(default_factory=dict)
    systems: list[SystemConfig] = Field(min_length=1)
    scorers: list[ScorerConfig] = Field(default_factory=list)
    threshold: float | None = Field(default=None, description="pass threshold for the case")
    gates: list[str] = Field(default_factory=list)
    baseline: BaselineConfig | None = None
    reports: list[ReportConfig] = Field(default_factory=lambda: [ReportConfig(kind="console")])
    judge: dict[str, Any] | None = None
    embeddings: dict[str, Any] | None = None
    comparison: dict[str, Any] = Field(default_factory=dict)
    seed: int = 0
    out: str | None = None
    plugins: list[str] = Field(
        default_factory=list, description="modules imported first (custom scorers register)"
    )
    settings: dict[str, Any] = Field(default_factory=dict)

    # not from YAML: where the suite file lives, so relative paths resolve against it
    base_dir: Path = Field(default=Path("."), exclude=True)
    source: Path | None = Field(default=None, exclude=True)

    @field_validator("systems")
    @classmethod
    def _unique_systems(cls, v: list[SystemConfig]) -> list[SystemConfig]:
        dupes = duplicates(s.name for s in v)
        if dupes:
            raise ValueError(f"duplicate system name(s): {', '.join(dupes)}")
        return v

    @field_validator("scorers")
    @classmethod
    def _unique_scorers(cls, v: list[ScorerConfig]) -> list[ScorerConfig]:
        dupes = duplicates(s.label for s in v)
        if dupes:
            raise ValueError(f"duplicate scorer label(s): {', '.join(dupes)}; give each an 'id'")
        return v

    def resolve(self, relative: str) -> Path:
        """A path from the suite file, resolved against the suite's folder."""
        p = Path(relative)
        return p if p.is_absolute() else self.base_dir / p
