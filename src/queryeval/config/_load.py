"""Load and check a suite file: YAML with line numbers, presets, known scorers."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from queryeval._validation import input_error
from queryeval._yaml import Located, load_yaml
from queryeval.config._model import SuiteConfig
from queryeval.config._presets import PRESETS, apply_preset
from queryeval.errors import InputError


def load_suite(path: str | Path) -> SuiteConfig:
    """Read a suite YAML file; every problem is an InputError naming the file and line."""
    path = Path(path)
    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, dict):
        raise InputError("expected a mapping (name, cases, systems, scorers ...)", path=path)
    preset = data.get("preset")
    if preset is not None and preset not in PRESETS:
        raise InputError(
            f"unknown preset {preset!r}; expected one of {', '.join(sorted(PRESETS))}",
            path=path,
            line=doc.line_of(("preset",)),
            where="preset",
        )
    try:
        suite = SuiteConfig.model_validate(apply_preset(data))
    except ValidationError as exc:
        raise input_error(exc, path=path, located=doc) from None
    suite.base_dir = path.resolve().parent
    suite.source = path.resolve()
    suite._lines = doc.lines
    _import_plugins(suite, path, doc)
    _check_scorers(suite, path, doc)
    _check_systems(suite, path, doc)
    return suite


def _import_plugins(suite: SuiteConfig, path: Path, doc: Located) -> None:
    """Import the suite's plugin modules (the suite's folder is importable)."""
    import importlib
    import sys

    if suite.plugins and str(suite.base_dir) not in sys.path:
        sys.path.insert(0, str(suite.base_dir))
    for i, module in enumerate(suite.plugins):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise InputError(
                f"cannot import plugin {module!r}: {exc}",
                path=path,
                line=doc.line_of(("plugins", i)),
                where=f"plugins[{i}]",
            ) from None


def _check_scorers(suite: SuiteConfig, path: Path, doc: Located) -> None:
    from queryeval.scorers import build_scorer, known_scorers

    line_of = doc.line_of
    for i, sc in enumerate(suite.scorers):
        if sc.name not in known_scorers():
            raise InputError(
                f"unknown scorer {sc.name!r}; expected one of {', '.join(sorted(known_scorers()))}",
                path=path,
                line=line_of(("scorers", i)),
                where=f"scorers[{i}]",
            )
        try:
            build_scorer(sc)
        except ValidationError as exc:
            raise input_error(
                exc,
                path=path,
                located=doc,
                base=("scorers", i, "options"),
            ) from None
        except (ValueError, TypeError) as exc:
            raise InputError(
                str(exc), path=path, line=line_of(("scorers", i)), where=f"scorers[{i}]"
            ) from None


def _check_systems(suite: SuiteConfig, path: Path, doc: Located) -> None:
    """Model and endpoint systems: the files they name, their templates, their databases."""
    from queryeval.systems import SystemProblem, check_system

    for i, system in enumerate(suite.systems):
        try:
            check_system(suite, system)
        except SystemProblem as exc:
            loc = ("systems", i, *exc.key)
            line = doc.line_of(loc) or doc.line_of(("systems", i))
            where = f"systems[{i}]." + ".".join(str(k) for k in exc.key)
            raise InputError(exc.message, path=path, line=line, where=where) from None
