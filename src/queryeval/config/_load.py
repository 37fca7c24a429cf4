"""Read a suite file: YAML with line numbers, presets, the suite model, its plugins.

Only parsing: what the suite names (scorers and their options, systems and their files) is
checked by the layers that own them (`queryeval.scorers.build_scorers`,
`queryeval.systems.check_systems`), together in `queryeval.runner.load_suite`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from queryeval._validation import input_error
from queryeval._yaml import Located, load_yaml
from queryeval.config._model import SuiteConfig
from queryeval.config._presets import PRESETS, apply_preset
from queryeval.errors import InputError


def load_suite(path: str | Path) -> SuiteConfig:
    """Read a suite YAML file (parsing only: see `queryeval.runner.load_suite` for the
    suite checked); every problem is an InputError naming the file and line."""
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
    suite._doc = doc
    _import_plugins(suite, path, doc)
    if suite.overlays:  # checked here: a bad overlay stops the run before anything runs
        from queryeval.config._overlays import load_overlays

        load_overlays(suite)
    return suite


def _import_plugins(suite: SuiteConfig, path: Path, doc: Located) -> None:
    """Import the suite's plugin modules (the suite's folder importable while they import;
    `sys.path` is left as it was)."""
    from queryeval._registry import import_module_from

    for i, module in enumerate(suite.plugins):
        try:
            import_module_from(module, [suite.base_dir])
        except ImportError as exc:
            raise InputError(
                f"cannot import plugin {module!r}: {exc}",
                path=path,
                line=doc.line_of(("plugins", i)),
                where=f"plugins[{i}]",
            ) from None
