"""`queryeval view`: a local web viewer over folders of runs (docs/viewer.md).

Pages for every run found, one run, its cases with filters, one case, two systems or two
runs side by side, and a human review written back as review.json; a JSON API under
/api/. Each run is read through an index (`RunIndex`: Parquet files outside the run
directory, queried with DuckDB) so that pages, `queryeval compare` and `queryeval history`
stay fast and small at 200,000 cases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from queryeval._registry import lazy_attributes, names_by_module

if TYPE_CHECKING:
    from queryeval.viewer._app import build_app, case_view, run_view, text_diff
    from queryeval.viewer._catalog import Catalog, Run, run_id
    from queryeval.viewer._compare import (
        compare_dirs,
        compare_indexed,
        index_diff,
        indexed,
        side_by_side,
    )
    from queryeval.viewer._index import (
        RunIndex,
        default_index_root,
        index_run,
        iter_run_dirs,
        record_row,
    )
    from queryeval.viewer._query import CaseFilter, cases_page, facets
    from queryeval.viewer._review import add_gold, add_override, review_file
    from queryeval.viewer._serve import Viewer, serve

# module -> the names it defines, imported on first use: `queryeval run` indexes its run at
# its end (`index_run`) without importing the web app, the comparisons or the review writer
# (issue 31)
_MODULES = {
    "_app": "build_app case_view run_view text_diff",
    "_catalog": "Catalog Run run_id",
    "_compare": "compare_dirs compare_indexed index_diff indexed side_by_side",
    "_index": "RunIndex default_index_root index_run iter_run_dirs record_row",
    "_query": "CaseFilter cases_page facets",
    "_review": "add_gold add_override review_file",
    "_serve": "Viewer serve",
}
_LAZY = names_by_module(_MODULES, __name__)

__all__ = [
    "CaseFilter",
    "Catalog",
    "Run",
    "RunIndex",
    "Viewer",
    "add_gold",
    "add_override",
    "build_app",
    "case_view",
    "cases_page",
    "compare_dirs",
    "compare_indexed",
    "default_index_root",
    "facets",
    "index_diff",
    "index_run",
    "indexed",
    "iter_run_dirs",
    "record_row",
    "review_file",
    "run_id",
    "run_view",
    "serve",
    "side_by_side",
    "text_diff",
]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
