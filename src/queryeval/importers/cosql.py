"""CoSQL: the Spider importer reading interactions (see `queryeval.importers.spider`)."""

from functools import partial

from queryeval.importers import spider as _family
from queryeval.importers.spider import OPTIONS, SCORERS, SKIPS_MISSING
from queryeval.importers.spider import build as _spider

SUMMARY = "CoSQL: interactions (dev.json), database/, gold SQL with blank lines between"

__all__ = ["HELP", "OPTIONS", "SCORERS", "SKIPS_MISSING", "SUMMARY", "build"]

HELP = _family.__doc__  # `queryeval import cosql --help`: the family's sources

build = partial(_spider, benchmark="cosql")
