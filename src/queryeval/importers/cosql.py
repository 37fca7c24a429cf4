"""CoSQL: the Spider importer reading interactions (see `queryeval.importers.spider`)."""

from __future__ import annotations

from queryeval.importers._suite import ImportedSuite, ImportRequest
from queryeval.importers.spider import build as _build_spider

SUMMARY = "CoSQL: interactions (dev.json), database/, gold SQL with blank lines between"


def build(request: ImportRequest) -> ImportedSuite:
    """The suite of CoSQL's interactions: one case per turn, earlier turns as its context."""
    suite = _build_spider(request)
    if request.name is None:
        suite.name = suite.name.replace("spider", "cosql", 1)
    return suite
