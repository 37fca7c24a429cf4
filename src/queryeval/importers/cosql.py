"""CoSQL: the Spider importer reading interactions (see `queryeval.importers.spider`)."""

from functools import partial

from queryeval.importers.spider import build as _spider

SUMMARY = "CoSQL: interactions (dev.json), database/, gold SQL with blank lines between"

build = partial(_spider, benchmark="cosql")
