"""`queryeval estimate SUITE.yaml`: judge calls not in cache, tokens and cost; calls nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from queryeval.cases import Attempt, Output
from queryeval.errors import InputError


def estimate_command(
    suite: Annotated[Path, typer.Argument(help="the suite YAML file", exists=True, dir_okay=False)],
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="judgment cache folder (default: .queryeval-cache)"),
    ] = None,
) -> None:
    """Print how many judge calls a run would make (those not in cache), their estimated
    tokens and cost, without calling the judge or any system."""
    from rich.console import Console

    from queryeval.cases import load_cases
    from queryeval.config import load_suite
    from queryeval.judges import HOW_TO_CONFIGURE
    from queryeval.scorers import estimate

    config = load_suite(suite)
    cases = load_cases(config.cases, config.base_dir)
    outputs = {
        system.name: load_saved_outputs(config.resolve(system.predictions))
        for system in config.systems
        if system.predictions
    }
    result = estimate(config, cases, outputs, cache_dir=cache_dir)
    console = Console(highlight=False)
    console.print(result.line())
    if result.model is None:
        console.print(HOW_TO_CONFIGURE)
    elif result.by_rubric:
        listed = ", ".join(f"{name}: {n}" for name, n in sorted(result.by_rubric.items()))
        console.print(f"judgments by rubric: {listed}")


def load_saved_outputs(path: Path) -> dict[str, Output]:
    """Saved predictions (JSONL): `{"case_id": ..., "output": {...}}` or an Attempt's fields
    at top level. Bad lines are InputErrors naming the file and line."""
    import orjson
    from pydantic import ValidationError

    from queryeval._validation import input_error

    outputs: dict[str, Output] = {}
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise InputError(f"cannot read predictions ({exc.strerror})", path=path) from exc
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise InputError("invalid JSON", path=path, line=lineno) from None
        if not isinstance(record, dict) or "case_id" not in record:
            raise InputError("expected an object with a case_id", path=path, line=lineno)
        case_id = str(record.pop("case_id"))
        try:
            if "output" in record:
                outputs[case_id] = Output.model_validate(record["output"])
            else:
                outputs[case_id] = Output(attempts=[Attempt.model_validate(record)])
        except ValidationError as exc:
            raise input_error(exc, path=path, line=lineno) from None
    return outputs
