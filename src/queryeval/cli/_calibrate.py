"""`queryeval calibrate SUITE.yaml`: find the similarity threshold for `semantic_dynamic` from
a labelled validation set (human 0/1 labels in `labels: {correct: ...}` of each case)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.embeddings import Calibration

CALIBRATION_FILE = "calibration.json"


def calibrate_command(
    suite: Annotated[Path, typer.Argument(help="validation suite YAML", show_default=False)],
    system: Annotated[
        str | None,
        typer.Option(help="the predictions system holding the labelled answers (default: first)"),
    ] = None,
    metric: Annotated[
        str, typer.Option(help="what the threshold maximises: accuracy or f1")
    ] = "accuracy",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help=f"default: {CALIBRATION_FILE} by the suite")
    ] = None,
    fine: Annotated[
        bool, typer.Option(help="also try every midpoint between observed similarities")
    ] = True,
) -> None:
    """Find and save the threshold; loudly flags the seed's proxy when cases carry no labels.

    Exit codes: 0 saved, 2 bad input (no predictions system, F1 without labels, ...).
    """
    from rich.console import Console

    from queryeval.cli._app import fail_input

    console = Console(stderr=False, highlight=False)
    try:
        calibration, path, skipped = calibrate(
            suite, system=system, metric=metric, out=out, fine=fine, progress=_say
        )
    except InputError as exc:
        raise fail_input(exc) from None
    if calibration.proxy:
        console.print(
            "[bold red]WARNING: no case has labels['correct']; using the seed's PROXY labels "
            "(similarity > 0.9 counts as correct). This only rediscovers ~0.9 and says nothing "
            "about real correctness. Label the validation answers (0/1) for a real threshold."
            "[/bold red]"
        )
    if skipped:
        console.print(f"[yellow]{skipped} case(s) without a 0/1 label were left out[/yellow]")
    c = calibration.confusion
    console.print(
        f"threshold {calibration.threshold:.4f} ({calibration.metric} = {calibration.score:.3f}"
        f" on n = {calibration.n}; tp {c['tp']} fp {c['fp']} fn {c['fn']} tn {c['tn']})"
    )
    console.print(
        f"seed grid 0.50..0.90 alone: {calibration.coarse_threshold} "
        f"({calibration.metric} = {calibration.coarse_score:.3f})"
    )
    console.print(
        f"the seed's fixed 0.75 on the same set: "
        f"{calibration.metric} = {calibration.default_score:.3f}"
    )
    console.print(f"embedding model: {calibration.model_id}")
    console.print(f"saved: {path}")


def _say(message: str) -> None:
    """A progress line on stderr (the results go to stdout)."""
    typer.echo(f"[queryeval] calibrate: {message}", err=True)


def calibrate(
    suite_path: Path,
    *,
    system: str | None = None,
    metric: str = "accuracy",
    out: Path | None = None,
    fine: bool = True,
    progress: Callable[[str], None] | None = None,
) -> tuple[Calibration, Path, int]:
    """(calibration, where it was saved, cases skipped for lacking a label). `progress`
    is told what is being done and how far (`calibrate_command`: lines on stderr)."""
    from queryeval.cases import load_cases
    from queryeval.embeddings import (
        Calibration,
        EmbeddingsUnavailable,
        encode_with_progress,
        save_calibration,
    )
    from queryeval.metrics import find_threshold
    from queryeval.metrics.rag import confusion_at, metric_from_confusion
    from queryeval.runner import cache_dir, load_suite
    from queryeval.scorers import ScoringContext
    from queryeval.scorers.answer import expected_answers
    from queryeval.systems import PredictionsFile

    if metric not in ("accuracy", "f1"):
        raise InputError(f"--metric must be accuracy or f1, not {metric!r}", where="--metric")
    say = progress or (lambda _: None)
    started = time.monotonic()
    say(f"reading {suite_path}")
    config = load_suite(suite_path)
    cases = load_cases(config.cases, config.base_dir)
    chosen = [s for s in config.systems if system is None or s.name == system]
    if not chosen:
        raise InputError(f"no system named {system!r}", path=config.source, where="systems")
    if not chosen[0].predictions:
        raise InputError(
            "calibration needs fixed, labelled answers: a system with 'predictions'",
            path=config.source,
            where=f"systems[{config.systems.index(chosen[0])}]",
        )
    outputs = PredictionsFile(config.resolve(chosen[0].predictions), {c.id for c in cases})

    pairs: list[tuple[str, list[str]]] = []
    labels: list[int] = []
    skipped = 0
    for case in cases:
        refs = [a.text for a in expected_answers(case)]
        final = outputs.get(case.id).final
        label = _label(case.labels.get("correct"), final.correct if final else None)
        if not refs or final is None:
            skipped += 1
            continue
        pairs.append((final.answer or "", refs))
        labels.append(label if label is not None else -1)
    if not pairs:
        raise InputError("no case has both an expected answer and a prediction", path=config.source)
    labelled = [i for i, y in enumerate(labels) if y >= 0]
    use_proxy = not labelled
    if not use_proxy:
        skipped += len(pairs) - len(labelled)
        pairs = [pairs[i] for i in labelled]
        labels = [labels[i] for i in labelled]

    ctx = ScoringContext(config, cache_dir=cache_dir(config))
    try:
        embedder = ctx.embedder()
        model_id = embedder.model_id
        texts = [a for a, _ in pairs] + [r for _, refs in pairs for r in refs]
        say(
            f"{len(pairs)} answer(s) of {chosen[0].name!r} and {len(texts) - len(pairs)} "
            f"reference(s) to embed with {model_id} (a model loads on first use: the first "
            "time can take minutes; texts embedded before are read from the cache)"
        )
        vectors = encode_with_progress(embedder, texts, say)
    except EmbeddingsUnavailable as exc:
        raise InputError(f"embeddings unavailable: {exc}", path=config.source) from None
    finally:
        ctx.close()
    n = len(pairs)
    sims: list[float] = []
    start = n
    for i, (_, refs) in enumerate(pairs):
        ref_vectors = vectors[start : start + len(refs)]
        start += len(refs)
        sims.append(float((ref_vectors @ vectors[i]).max()))
    say(f"searching the threshold over {n} similarities ({metric})")
    try:
        result = find_threshold(
            sims,
            None if use_proxy else labels,
            metric="f1" if metric == "f1" else "accuracy",
            fine=fine,
        )
    except ValueError as exc:
        raise InputError(str(exc), path=config.source, where="--metric") from None
    path = out if out is not None else config.base_dir / CALIBRATION_FILE
    at_default = metric_from_confusion(
        result.metric,
        *confusion_at(sims, labels if not use_proxy else [s > 0.9 for s in sims], threshold=0.75),
    )
    calibration = Calibration(
        model_id=model_id,
        threshold=result.threshold,
        metric=result.metric,
        score=result.score,
        n=result.n,
        proxy=result.proxy,
        confusion=result.confusion,
        coarse_threshold=result.coarse_threshold,
        coarse_score=result.coarse_score,
        default_score=at_default,
        suite=_relative(config.source, path.parent),
    )
    saved = save_calibration(calibration, path)
    say(f"done in {time.monotonic() - started:.1f} s")
    return calibration, saved, skipped


def _relative(source: Path | None, folder: Path) -> str | None:
    """The suite's path relative to the calibration file's folder (portable), else absolute."""
    if source is None:
        return None
    try:
        return os.path.relpath(source, folder.resolve())
    except ValueError:  # another drive on Windows
        return str(source)


def _label(case_label: object, attempt_label: bool | None) -> int | None:
    """The 0/1 human label: the case's labels['correct'], else the attempt's `correct`."""
    for value in (case_label, attempt_label):
        if isinstance(value, bool) or value in (0, 1):
            return int(value)
    return None
