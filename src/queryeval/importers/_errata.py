"""Gold errata of the Spider family as overlay entries (issue 32; docs/audit.md).

An errata file (YAML, ``errata:`` a list) transcribes errata reported in prose in issue
trackers: per erratum the benchmark and split, where the example is (``index`` in the
examples file, or ``gold_line`` in ``<split>_gold.txt``), its database, the ``original``
gold as reported, the ``corrected`` gold, a reason and the source (url, author, date). The
packaged file (`BUILTIN`, ``--set corrections=spider-errata``) holds the published ones.

An erratum is applied only where the imported case's gold is its ``original``
(whitespace aside): a dataset release that differs (already fixed, or another version) is
reported, never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from queryeval.errors import InputError

BUILTIN = "spider-errata"
DATA_FILE = "spider_errata.yaml"
FIELDS = ("benchmark", "split", "database", "original", "corrected", "reason")


@dataclass
class Erratum:
    """One erratum as written (``line``: its line in the errata file)."""

    benchmark: str
    split: str
    database: str
    original: str
    corrected: str
    reason: str
    source: str
    line: int
    index: int | None = None
    gold_line: int | None = None

    @property
    def locator(self) -> str:
        """Where the example is, in the dataset's own terms."""
        if self.index is not None:
            return f"{self.split} index {self.index}"
        return f"{self.split}_gold.txt line {self.gold_line}"


def read_errata(path: Path) -> list[Erratum]:
    """The errata of a file; a malformed one is an InputError at its line.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "e.yaml"
    >>> _ = p.write_text('''errata:
    ... - {benchmark: spider, split: dev, index: 3, database: db, original: SELECT 1,
    ...    corrected: SELECT 2, reason: typo, source: {url: u, author: a, date: d}}
    ... ''')
    >>> [(e.locator, e.corrected, e.source, e.line) for e in read_errata(p)]
    [('dev index 3', 'SELECT 2', 'u (a, d)', 2)]
    """
    from queryeval._yaml import load_yaml

    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("errata"), list):
        raise InputError("expected a mapping with 'errata:', a list", path=path, line=1)
    out: list[Erratum] = []
    for i, item in enumerate(data["errata"]):
        line = doc.line_of(("errata", i)) or 1
        if not isinstance(item, dict):
            raise InputError("expected an erratum (a mapping)", path=path, line=line)
        values: dict[str, Any] = {}
        for key in FIELDS:
            value = item.get(key)
            if not isinstance(value, str) or not value.strip():
                raise InputError(
                    f"'{key}': expected a non-empty string",
                    path=path,
                    line=doc.line_of(("errata", i, key)) or line,
                )
            values[key] = value.strip()
        locators = {k: item.get(k) for k in ("index", "gold_line") if k in item}
        if len(locators) != 1 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in locators.values()
        ):
            raise InputError(
                "expected one locator: 'index' (0-based) or 'gold_line' (1-based), an integer",
                path=path,
                line=line,
            )
        source = item.get("source")
        if not isinstance(source, dict) or not isinstance(source.get("url"), str):
            raise InputError(
                "'source': expected a mapping with url (and author, date)",
                path=path,
                line=doc.line_of(("errata", i, "source")) or line,
            )
        who = ", ".join(str(source[k]) for k in ("author", "date") if source.get(k))
        out.append(
            Erratum(
                **values,
                source=f"{source['url']} ({who})" if who else source["url"],
                line=line,
                index=locators.get("index"),
                gold_line=locators.get("gold_line"),
            )
        )
    return out


def _same(a: str | None, b: str) -> bool:
    return a is not None and " ".join(a.split()) == " ".join(b.split())


def _gold_lines(cases: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """{line of <split>_gold.txt: case} for an interactive import: one query a line, a
    blank line after each interaction (the layout the official scripts read)."""
    out: dict[int, dict[str, Any]] = {}
    line, last = 1, None
    for case in cases:
        interaction = (case.get("metadata") or {}).get("interaction")
        if last is not None and interaction != last:
            line += 1
        out[line] = case
        line, last = line + 1, interaction
    return out


def match(
    errata: list[Erratum],
    cases: list[dict[str, Any]],
    *,
    benchmark: str,
    split: str,
    gold: Any,
) -> tuple[list[dict[str, Any]], list[str], int]:
    """(overlay entries, what was not applied and why, errata for other benchmarks or
    splits) for the imported ``cases``; ``gold(case)`` is (query text, database)."""
    by_index = {(c.get("metadata") or {}).get("index"): c for c in cases}
    by_line = _gold_lines(cases)
    entries: list[dict[str, Any]] = []
    reports: list[str] = []
    other = 0
    for e in errata:
        if e.benchmark != benchmark or e.split != split:
            other += 1
            continue
        case = by_index.get(e.index) if e.index is not None else by_line.get(e.gold_line or 0)
        where = f"line {e.line} ({e.locator})"
        if case is None:
            reports.append(f"{where}: no such case in the import")
            continue
        text, database = gold(case)
        if database is not None and database != e.database:
            reports.append(f"{where}: case {case['id']} is on {database!r}, not {e.database!r}")
        elif _same(text, e.corrected):
            reports.append(f"{where}: case {case['id']} already has the corrected gold")
        elif not _same(text, e.original):
            reports.append(
                f"{where}: case {case['id']}'s gold is not the erratum's original "
                f"(expected {e.original!r}, found {text!r})"
            )
        else:
            entries.append(
                {"case_id": str(case["id"]),
                 "gold": {"text": e.corrected, "database": e.database},
                 "reason": f"{e.reason} (errata line {e.line}: {e.locator})",
                 "source": e.source}
            )  # fmt: skip
    return entries, reports, other
