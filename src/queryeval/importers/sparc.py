"""SParC: the Spider importer reading interactions (see `queryeval.importers.spider`)."""

from functools import partial

from queryeval.importers.spider import OPTIONS, SCORERS, SKIPS_MISSING
from queryeval.importers.spider import build as _spider

SUMMARY = "SParC: interactions (dev.json), database/, gold SQL with blank lines between"

__all__ = ["OPTIONS", "SCORERS", "SKIPS_MISSING", "SUMMARY", "build"]

build = partial(_spider, benchmark="sparc")
