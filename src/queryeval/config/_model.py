"""The suite configuration: cases, databases, systems, scorers, gates, reports."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from queryeval._validation import duplicates, input_error
from queryeval.config._systems import (
    MODEL_ONLY,
    QUERY_TASKS,
    EndpointSpec,
    ExamplesSpec,
    ModelSpec,
    RefineSpec,
    ReplySpec,
    Task,
)
from queryeval.errors import InputError


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatabaseConfig(_Model):
    """A named database: an engine and where it lives (embedded by default); the engine and
    its options are checked against the engines when a run is planned."""

    engine: str
    path: str | None = None
    url: str | None = None
    fixture: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class SystemConfig(_Model):
    """A system under test: saved predictions, a Python callable, a model behind an
    OpenAI-compatible chat endpoint (`model:`), or a deployed HTTP service (`endpoint:`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    predictions: str | None = None
    callable: str | None = None
    endpoint: EndpointSpec | None = None
    model: ModelSpec | None = None
    params: dict[str, Any] | list[dict[str, Any]] | None = None
    concurrency: int = Field(default=4, ge=1, le=1024)
    timeout_s: float | None = Field(default=None, gt=0)
    # model systems (see queryeval.config._systems and docs/systems.md)
    prompt: str | None = Field(default=None, description="Jinja template file of the prompt")
    temperature: float | None = Field(default=None, ge=0, le=2)
    samples: int = Field(default=1, ge=1, le=1000, description="independent attempts per case")
    refine: RefineSpec | None = None
    examples: ExamplesSpec | None = None
    tools: list[dict[str, Any]] | str | None = Field(
        default=None, description="OpenAI tool definitions, or a JSON/YAML file of them"
    )
    tool_choice: Any = None
    schema_source: str | None = Field(
        default=None, alias="schema", description="schema text or file for the prompt"
    )
    # model and endpoint systems
    task: Task | None = Field(default=None, description="default: from the case's gold")
    database: str | None = Field(default=None, description="default: the case's database")
    reply: ReplySpec = Field(default_factory=ReplySpec)

    @model_validator(mode="after")
    def _exactly_one_source(self) -> SystemConfig:
        kinds = ("predictions", "callable", "endpoint", "model")
        given = [k for k in kinds if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(
                "a system needs exactly one of 'predictions', 'callable', 'endpoint' or 'model'"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.params is not None and not self.callable:
            raise ValueError("'params' applies only to a 'callable' system")
        if self.model is None:
            # values other than the defaults (a dumped config repeats every default)
            misplaced = [k for k in MODEL_ONLY if self._given(k)]
            if misplaced:
                raise ValueError(
                    f"'{misplaced[0].replace('_source', '')}' applies only to a 'model' system"
                )
            if self.endpoint is None:
                extra = [k for k in ("task", "database", "reply") if self._given(k)]
                if extra:
                    raise ValueError(f"'{extra[0]}' applies only to 'model' and 'endpoint' systems")
        else:
            self._check_model()
        return self

    def _given(self, key: str) -> bool:
        """Whether `key` holds something other than its default."""
        field = type(self).model_fields[key]
        return bool(getattr(self, key) != field.get_default(call_default_factory=True))

    def _check_model(self) -> None:
        if self.samples > 1:
            if self.effective_temperature == 0:
                raise ValueError(
                    f"samples: {self.samples} at temperature 0 gives {self.samples} copies of "
                    "one answer, not independent samples; set temperature above 0"
                )
            if self.refine is not None:
                raise ValueError(
                    "'samples' and 'refine' cannot be combined: the attempts of a case are "
                    "either independent samples (pass@k) or the iterations of one loop"
                )
        if self.refine is not None and self.task is not None and self.task not in QUERY_TASKS:
            raise ValueError(
                f"'refine' needs a query task (sql, kql or cypher) to validate and execute; "
                f"task is {self.task}"
            )

    @property
    def effective_temperature(self) -> float:
        """The sampling temperature of a model system: the system's, else the model's."""
        if self.temperature is not None:
            return self.temperature
        return self.model.temperature if self.model is not None else 0.0

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
    threshold: float | None = Field(
        default=None, ge=0, le=1, description="pass threshold of the scorer's value"
    )

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


class GridSettings(_Model):
    """`queryeval grid`'s defaults for this suite."""

    top_n: int = Field(default=5, ge=1, description="configurations re-judged and shown")
    rank_by: str | None = Field(default=None, description="scorer label that ranks the grid")


_RAY_ADDRESS = r"^(auto|local|ray://[^\s/]+(:\d+)?/?|[A-Za-z0-9_.\-\[\]:]+:\d+)$"


class RaySettings(_Model):
    """How a run with `executor: ray` reaches its Ray cluster and what it asks of it (see
    docs/ray.md). None of it shapes a score: it is left out of the run's config hash."""

    address: str | None = Field(
        default=None,
        description="auto, ray://host:10001 or host:6379 (join that cluster); unset: start a "
        "local cluster sized to this machine, shut down after the run",
    )
    num_cpus: int | None = Field(
        default=None, ge=1, le=4096, description="CPUs of a local cluster (default: cores)"
    )
    task_cpus: float = Field(
        default=0.5, gt=0, le=64, description="CPUs each scoring task asks for (fractional)"
    )
    actor_cpus: float = Field(
        default=0.0, ge=0, le=64, description="CPUs each service actor asks for"
    )
    shards: int | None = Field(
        default=None, ge=1, le=1_000_000, description="shards of a saved-prediction run"
    )
    batch_size: int = Field(
        default=8, ge=1, le=10_000, description="(system, case) items per task, other runs"
    )
    max_retries: int = Field(
        default=3, ge=0, le=100, description="retries of a pure task whose worker was lost"
    )
    connections: int = Field(
        default=4, ge=1, le=1024, description="concurrent queries per database, cluster-wide"
    )
    connections_per_database: dict[str, int] = Field(
        default_factory=dict, description="the cap of one database (overrides `connections`)"
    )
    embedder_gpus: float | None = Field(
        default=None, ge=0, le=64, description="GPUs of the embedder actor (default: 1 if any)"
    )
    runtime_env: dict[str, Any] | None = Field(
        default=None, description="Ray runtime_env for the job (working_dir, pip, env_vars)"
    )

    @field_validator("address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is not None and not re.match(_RAY_ADDRESS, value):
            raise ValueError(
                f"{value!r} is not a Ray address: expected auto, ray://HOST:PORT (Ray Client) "
                "or HOST:PORT (the head node's GCS); leave it out to start a local cluster"
            )
        return value

    @field_validator("connections_per_database")
    @classmethod
    def _positive_caps(cls, value: dict[str, int]) -> dict[str, int]:
        bad = [name for name, n in value.items() if n < 1]
        if bad:
            raise ValueError(f"the cap of database {bad[0]!r} must be at least 1")
        return value


class SettingsConfig(_Model):
    """Run settings: where caches go, how a large run is split, and how much unscored
    work a figure may hide before it is flagged."""

    cache_dir: str | None = Field(default=None, description="gold results, fixtures, judge")
    cache_max_mb: float | None = Field(
        default=None, gt=0, description="bound of the judge's and systems' reply caches"
    )
    workers: int | None = Field(default=None, ge=1, description="forked workers (default: cores)")
    shard_min_cases: int | None = Field(
        default=None, ge=1, description="(system, case) pairs from which a run is sharded"
    )
    grid: GridSettings = Field(default_factory=GridSettings)
    executor: Literal["local", "ray"] = Field(
        default="local", description="local: this machine; ray: a Ray cluster (docs/ray.md)"
    )
    ray: RaySettings = Field(default_factory=RaySettings)
    max_unscored_share: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="a mean with a larger share of unscored (or error) cases is flagged, and "
        "fails the run under --strict",
    )
    max_scorer_error_share: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="a scorer that raises on a larger share of the cases stops the run (exit 2)",
    )


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
    threshold: float | None = Field(
        default=None, ge=0, le=1, description="pass threshold for the case"
    )
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
    settings: SettingsConfig = Field(default_factory=SettingsConfig)
    overlays: list[str] = Field(
        default_factory=list, description="correction overlay files (docs/audit.md)"
    )

    # not from YAML: where the suite file lives, so relative paths resolve against it
    base_dir: Path = Field(default=Path("."), exclude=True)
    source: Path | None = Field(default=None, exclude=True)
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)
    _doc: Any = PrivateAttr(default=None)  # the Located YAML document it was read from

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """The suite file's line of `loc` (or of its nearest ancestor written there; a
        preset's scorers point at `preset:`)."""
        lines = self._lines
        if loc and loc[0] == "scorers" and ("scorers",) not in lines and ("preset",) in lines:
            return lines[("preset",)]
        loc = tuple(loc)
        while loc:
            if loc in lines:
                return lines[loc]
            loc = loc[:-1]
        return lines.get(())

    def entry_error(
        self, loc: tuple[str | int, ...], message: str, *, where: str | None = None
    ) -> InputError:
        """An InputError at `loc` of the suite file as written (its path and the line of
        `loc` or its nearest ancestor), for the layers that check what the suite names."""
        doc = self._doc
        line = doc.line_of(loc) if doc is not None else self.line_of(loc)
        if where is None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        return InputError(message, path=doc.path if doc is not None else self.source,
                          line=line, where=where or None)  # fmt: skip

    def options_error(self, exc: ValidationError, base: tuple[str | int, ...]) -> InputError:
        """The first problem of options at `base` (e.g. a scorer's) that did not validate,
        at its line of the suite file."""
        path = self._doc.path if self._doc is not None else (self.source or Path("suite"))
        return input_error(exc, path=path, located=self._doc, base=base)

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
