"""Building the run's judge from the suite's `judge:` section, once per run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from queryeval._validation import input_error
from queryeval.errors import InputError
from queryeval.judges._config import JudgeConfig
from queryeval.judges._judge import Judge
from queryeval.llm import cache_bound

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
    from queryeval.resources import RunResources

HOW_TO_CONFIGURE = (
    "no judge configured: add to the suite `judge: {model: gpt-4o-mini, base_url: "
    "https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}` (any OpenAI-compatible "
    "endpoint: Azure OpenAI, vLLM, Ollama, LiteLLM); see docs/judge.md"
)


def judge_config(suite: SuiteConfig) -> JudgeConfig | None:
    """The suite's judge configuration, validated (InputError naming the suite file)."""
    if suite.judge is None:
        return None
    try:
        return JudgeConfig.model_validate(suite.judge)
    except ValidationError as exc:
        err = input_error(exc, path=suite.source or Path("suite"))
        raise InputError(
            err.message, path=err.path, where=f"judge.{err.where or ''}".rstrip(".")
        ) from None


def build_judge(suite: SuiteConfig, cache_dir: Path | None) -> Judge | None:
    """A new judge for the suite (None without a `judge:` section). Rubric override paths
    resolve against the suite's folder."""
    config = judge_config(suite)
    if config is None:
        return None
    files = {name: suite.resolve(path) for name, path in config.rubrics.items()}
    for name, path in files.items():
        if not path.is_file():
            raise InputError(
                f"rubric file for {name!r} not found", path=path, where=f"judge.rubrics.{name}"
            )
    return Judge(
        config, cache_dir=cache_dir, rubric_files=files, cache_max_bytes=cache_bound(suite.settings)
    )


def judge_from_context(ctx: RunResources) -> Judge | None:
    """The run's shared judge (built on first use), or None when the suite configures none."""
    if ctx.suite is None or ctx.suite.judge is None:
        return None
    suite = ctx.suite
    return ctx.resource("judge", lambda: build_judge(suite, ctx.cache_dir))
