"""An import-linter contract that import-linter does not ship: private modules stay private.

A module whose dotted name has a part starting with ``_`` (``queryeval.engines._base``) is
private to the package that holds that part (``queryeval.engines``): only modules inside
that package may import it. Everyone else imports what the package exports from its
``__init__``. (import-linter's own ``protected`` contract needs each private module named:
its wildcards replace whole names only.) Configured in pyproject.toml and run by
``lint-imports`` in ``make lint``.
"""

from __future__ import annotations

from dataclasses import dataclass

import grimp
from importlinter import Contract, ContractCheck, fields, output
from importlinter.application import contract_utils


@dataclass(frozen=True)
class _Illegal:
    importer: str
    imported: str
    owner: str
    lines: tuple[int, ...]


def private_owner(module: str) -> str | None:
    """The package a module is private to (the part before its first ``_`` name), or None
    for a public module. ``__main__``-style dunder names are not private.

    >>> private_owner("queryeval.engines._base"), private_owner("queryeval.metrics.results")
    ('queryeval.engines', None)
    """
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[:i])
    return None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


class PrivateModulesContract(Contract):
    """No module imports a private module of a package it is not inside.

    Configuration: ``ignore_imports`` (import expressions, each a known violation).
    """

    type_name = "private_modules"

    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=contract_utils.AlertLevel.ERROR,
        )
        illegal: list[_Illegal] = []
        for imported in sorted(graph.modules):
            owner = private_owner(imported)
            if owner is None:
                continue
            for importer in sorted(graph.find_modules_that_directly_import(imported)):
                if _inside(importer, owner):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                lines = tuple(d["line_number"] for d in details)
                illegal.append(_Illegal(importer, imported, owner, lines))
        return ContractCheck(
            kept=not illegal,
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
            metadata={"illegal": illegal},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for item in check.metadata["illegal"]:
            where = ", ".join(map(str, item.lines))
            output.print_error(
                f"- {item.importer} -> {item.imported} (l.{where}): private to {item.owner}; "
                f"export what is needed from {item.owner}",
                bold=False,
            )
            output.new_line()
