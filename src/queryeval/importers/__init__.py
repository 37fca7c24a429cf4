"""Importers: a benchmark's downloaded files -> an ordinary suite directory.

``queryeval import FORMAT SRC... --out DIR`` writes ``DIR/suite.yaml``, ``DIR/cases.jsonl``,
``DIR/predictions/<system>.jsonl`` (converted predictions, when given) and any database the
format has to build; databases the user downloaded are referenced by absolute path, never
copied. The result is run like any suite (``queryeval run DIR/suite.yaml``).

Adding a format (no central table to edit): create ``queryeval/importers/<format>.py``
(``-`` in a format's name becomes ``_``) defining

- ``SUMMARY: str``: one line for ``queryeval import --help``;
- ``def build(request: ImportRequest) -> ImportedSuite``: read ``request.sources`` (files or
  folders, in the order given), ``request.predictions`` (``(system name, path)`` pairs) and
  ``request.options`` (``--set key=value`` pairs), write any generated file under
  ``request.out``, and return the suite to write. Raise ``InputError(message, path=...,
  line=..., where=...)`` for malformed input: the command prints it and exits 2, having
  written nothing.

Keep a format module's top-level imports light (``queryeval import --list`` imports every
module to read its ``SUMMARY``); import heavy libraries inside ``build``.
``queryeval.importers._suite.write_suite`` writes what ``build`` returned. Helpers shared by
formats (JSON/JSONL reading with places, SQLite database discovery) live in ``_read.py``;
those of record tables (CSV / Parquet rows, predictions by case id) and of formats that write
files of their own (``SuiteWithFiles``) in ``_records.py``.

>>> from queryeval.importers import formats
>>> "spider" in formats()
True
"""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from queryeval.errors import InputError
from queryeval.importers._read import expect_list_of_objects, read_json
from queryeval.importers._suite import ImportedSuite, ImportRequest, check_out, write_suite

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "ImportRequest",
    "ImportedSuite",
    "formats",
    "importer",
    "run_import",
]


def formats() -> dict[str, str]:
    """Every format this installation can import, with its one-line summary."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "build"):
            found[info.name] = str(getattr(module, "SUMMARY", ""))
    return dict(sorted(found.items()))


def importer(name: str) -> ModuleType:
    """The module of format ``name`` (``bird-mini-dev`` -> ``bird_mini_dev``)."""
    module_name = name.strip().lower().replace("-", "_")
    if not module_name.isidentifier() or module_name.startswith("_"):
        raise InputError(f"unknown format {name!r}; expected one of {', '.join(formats())}")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{module_name}":
            raise
        raise InputError(
            f"unknown format {name!r}; expected one of {', '.join(formats())}"
        ) from None
    if not hasattr(module, "build"):
        raise InputError(f"unknown format {name!r}; expected one of {', '.join(formats())}")
    return module


def run_import(name: str, request: ImportRequest, *, overwrite: bool = False) -> ImportedSuite:
    """Build the suite of format ``name`` from ``request`` and write it under ``request.out``."""
    suite: ImportedSuite = importer(name).build(request)
    write_suite(suite, request.out, overwrite=overwrite)
    return suite
