"""Questions asked of a run's index with DuckDB: a filtered, sorted page of (system, case)
rows, the facets of the filters, the figures with a review's overrides, and the rows of a
side-by-side view. A review's overrides (review.json: a handful of records) are joined in
as a small table, so every answer shows them as such."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from queryeval.errors import InputError
from queryeval.viewer._index import RunIndex, connect

SORTS = {
    "row": "r.row",
    "case": "r.case_id",
    "system": "r.system",
    "latency": "r.latency",
    "cost": "r.cost",
    "status": "status",
    "score": "score",
    "tokens": "r.tokens_in",
}
STATUSES = ("pass", "fail", "error", "none")
MAX_PAGE = 500


def _files(index: RunIndex) -> list[str]:
    return [str(p) for p in index.parts]


def overrides_table(review: Mapping[str, Any] | None) -> tuple[str, list[Any], list[str]]:
    """review.json's records as a SQL table (text and parameters): system, case_id, passed,
    and the overridden scores' values as `v:LABEL` (what the index's columns are replaced
    by); and those columns. (A VALUES list: registering an Arrow table would import pandas.)

    >>> sql, params, cols = overrides_table({"records": [{"system": "s", "case_id": "c",
    ...     "passed": True, "scores": {"em": {"value": 1.0}}}]})
    >>> params, cols
    (['s', 'c', True, 1.0], ['v:em'])
    """
    entries = [e for e in (review or {}).get("records") or [] if isinstance(e, Mapping)]
    labels = sorted({lb for e in entries for lb in (e.get("scores") or {})})
    columns = [f"v:{label}" for label in labels]
    names = ", ".join(["system", "case_id", "passed", *(_q(c) for c in columns)])
    if not entries:
        return (
            "(SELECT NULL::VARCHAR AS system, NULL::VARCHAR AS case_id, NULL::BOOLEAN AS passed "
            "WHERE false)",
            [],
            [],
        )
    params: list[Any] = []
    rows = []
    for e in entries:
        scores = e.get("scores") or {}
        values = [((scores.get(lb) or {}).get("value")) for lb in labels]
        params.extend([str(e.get("system")), str(e.get("case_id")), e.get("passed"), *values])
        rows.append("(?::VARCHAR, ?::VARCHAR, ?::BOOLEAN" + ", ?::DOUBLE" * len(labels) + ")")
    return f"(SELECT * FROM (VALUES {', '.join(rows)}) AS t({names}))", params, columns


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _source(
    index: RunIndex, con: Any, review: Mapping[str, Any] | None, alias: str
) -> tuple[str, list[Any]]:
    """A SELECT of the run's records (the last of each (system, case) when a resumed run
    wrote one twice), with the review's overrides in place, and its parameters."""
    files = _files(index)
    if not files:
        raise InputError("the run has no readable record yet", path=index.run_dir)
    base = f"(SELECT *, row AS first_row FROM read_parquet({files!r}, union_by_name=true))"
    if index.state.duplicates:  # the last record counts, in the place of the first
        base = (
            f"(SELECT *, min(row) OVER (PARTITION BY system, case_id) AS first_row "
            f"FROM read_parquet({files!r}, union_by_name=true) "
            f"QUALIFY row = max(row) OVER (PARTITION BY system, case_id))"
        )
    table, params, overridden = overrides_table(review)
    columns = set(index.state.columns)
    replace = [f"coalesce(rv.{_q(c)}, x.{_q(c)}) AS {_q(c)}" for c in overridden if c in columns]
    replace_clause = f" REPLACE ({', '.join(replace)})" if replace else ""
    passed = "CASE WHEN rv.system IS NOT NULL THEN rv.passed ELSE x.passed END"
    return (
        f"(SELECT x.*{replace_clause}, {passed} AS verdict, rv.system IS NOT NULL AS reviewed "
        f"FROM {base} x LEFT JOIN {table} rv ON rv.system = x.system "
        f"AND rv.case_id = x.case_id)"
    ), params


@dataclass
class CaseFilter:
    """The filters of the cases table."""

    system: str | None = None
    status: str | None = None  # pass, fail, error, none
    reason: str | None = None
    tag: str | None = None
    scorer: str | None = None  # the score the range and the score sort apply to
    min_score: float | None = None
    max_score: float | None = None
    text: str | None = None
    reviewed: bool | None = None
    sort: str = "row"
    desc: bool = False
    offset: int = 0
    limit: int = 50

    def check(self, index: RunIndex) -> None:
        """InputError for a filter the run cannot answer."""
        if self.status and self.status not in STATUSES:
            raise InputError(f"status must be one of {', '.join(STATUSES)}", where="status")
        if self.sort not in SORTS:
            raise InputError(f"sort must be one of {', '.join(SORTS)}", where="sort")
        if self.scorer and f"v:{self.scorer}" not in index.state.columns:
            raise InputError(f"the run has no scorer {self.scorer!r}", where="scorer")
        if not 0 < self.limit <= MAX_PAGE or self.offset < 0:
            raise InputError(f"limit must be 1..{MAX_PAGE} and offset >= 0", where="limit")


_STATUS = (
    "CASE WHEN r.error IS NOT NULL THEN 'error' WHEN r.verdict THEN 'pass' "
    "WHEN NOT r.verdict THEN 'fail' ELSE 'none' END"
)


def scorer_labels(index: RunIndex) -> list[str]:
    """The scorers the run's records have values of, in first-seen order."""
    return [c[2:] for c in index.state.columns if c.startswith("v:")]


def cases_page(index: RunIndex, review: Mapping[str, Any] | None, f: CaseFilter) -> dict[str, Any]:
    """One page of (system, case) rows matching the filter, and how many match."""
    f.check(index)
    con = connect()
    labels = scorer_labels(index)
    scorer = f.scorer or (labels[0] if labels else None)
    score = f"r.{_q('v:' + scorer)}" if scorer else "NULL"
    cases = index.cases_path
    # a filter on the cases (tag, question, gold) is answered on the cases' side first and
    # semi-joined: the ids of the few matching cases, never every case joined to every
    # record; the page's rows get their question, gold and tags afterwards, 50 ids at a time
    in_cases = f"r.case_id IN (SELECT case_id FROM read_parquet('{cases}') WHERE {{}})"
    where: list[str] = []
    params: list[Any] = []
    if f.system:
        where.append("r.system = ?")
        params.append(f.system)
    if f.status:
        where.append(f"({_STATUS}) = ?")
        params.append(f.status)
    if f.reason:
        where.append("r.reason = ?")
        params.append(f.reason)
    if f.tag and cases:
        where.append(in_cases.format("list_contains(tags, ?)"))
        params.append(f.tag)
    if f.min_score is not None:
        where.append(f"{score} >= ?")
        params.append(f.min_score)
    if f.max_score is not None:
        where.append(f"{score} <= ?")
        params.append(f.max_score)
    if f.reviewed is not None:
        where.append("r.reviewed" if f.reviewed else "NOT r.reviewed")
    if f.text:
        like = f"%{_like(f.text)}%"
        either = ["r.case_id ILIKE ?", "r.prediction ILIKE ?"]
        params.extend([like, like])
        if cases:
            either.append(in_cases.format("question ILIKE ? OR gold ILIKE ?"))
            params.extend([like, like])
        where.append("(" + " OR ".join(either) + ")")
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    order = SORTS[f.sort]
    direction = "DESC" if f.desc else "ASC"
    source, first = _source(index, con, review, "a")
    body = f"FROM {source} r {clause}"
    params = first + params
    # a filtered page is one pass (the total counted beside the rows); all rows, two (a
    # count is cheap, and the count beside every row of 200,000 is not)
    counted = ", count(*) OVER () AS total" if where else ""
    rows = con.execute(
        f"SELECT r.row, r.system, r.case_id, {_STATUS} AS status, r.reason, r.latency, r.cost, "
        f"r.tokens_in, r.tokens_out, r.attempts, r.prediction, r.reviewed, {score} AS score"
        f"{counted} {body} ORDER BY {order} {direction} NULLS LAST, r.row "
        f"LIMIT {int(f.limit)} OFFSET {int(f.offset)}",
        params,
    ).fetchall()
    if where and rows:
        total = rows[0][-1]
        rows = [r[:-1] for r in rows]
    else:  # no filter, or a page past the end
        total = con.execute(f"SELECT count(*) {body}", params).fetchone()[0]
    names = ["row", "system", "case_id", "status", "reason", "latency", "cost", "tokens_in",
             "tokens_out", "attempts", "prediction", "reviewed", "score"]  # fmt: skip
    out = [dict(zip(names, r, strict=True)) for r in rows]
    about: dict[str, tuple[Any, Any, Any]] = {}
    ids = list({r["case_id"] for r in out})
    if cases and ids:
        found = con.execute(
            f"SELECT case_id, question, gold, tags FROM read_parquet('{cases}') "
            "WHERE case_id IN (SELECT unnest(?::VARCHAR[]))",
            [ids],
        ).fetchall()
        about = {cid: (q, g, t) for cid, q, g, t in found}
    for r in out:
        r["question"], r["gold"], r["tags"] = about.get(r["case_id"], (None, None, None))
    return {"total": int(total), "offset": f.offset, "limit": f.limit, "scorer": scorer,
            "rows": out}  # fmt: skip


def _like(text: str) -> str:
    """The text for ILIKE with its wildcards taken literally.

    >>> _like("50%_a")
    '50\\\\%\\\\_a'
    """
    return re.sub(r"([%_\\])", r"\\\1", text)


def facets(index: RunIndex, review: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the filters offer: systems, statuses, failure reasons, tags (with counts)."""
    con = connect()
    source, params = _source(index, con, review, "a")

    def counts(expr: str) -> list[list[Any]]:
        rows = con.execute(
            f"SELECT {expr} AS k, count(*) n FROM {source} r WHERE {expr} IS NOT NULL "
            "GROUP BY k ORDER BY n DESC, k LIMIT 200",
            params,
        ).fetchall()
        return [[k, int(n)] for k, n in rows]

    out = {
        "systems": counts("r.system"),
        "statuses": counts(_STATUS),
        "reasons": counts("r.reason"),
        "scorers": scorer_labels(index),
        "tags": [],
    }
    cases = index.cases_path
    if cases:
        rows = con.execute(
            f"SELECT t, count(*) n FROM (SELECT unnest(tags) t FROM read_parquet('{cases}')) "
            "GROUP BY t ORDER BY n DESC, t LIMIT 200"
        ).fetchall()
        out["tags"] = [[t, int(n)] for t, n in rows]
    return out


def verdicts(
    index: RunIndex, review: Mapping[str, Any] | None, systems: Sequence[str] | None = None
) -> dict[str, Any]:
    """Each system's case verdicts with the review's overrides, as a numpy array (1 pass,
    0 fail, -1 none), and how many records a review changed."""
    import numpy as np

    con = connect()
    source, params = _source(index, con, review, "a")
    data = con.execute(
        f"SELECT system, CASE WHEN verdict THEN 1 WHEN NOT verdict THEN 0 ELSE -1 END::TINYINT "
        f"AS v, reviewed FROM {source} ORDER BY system, first_row",
        params,
    ).fetchnumpy()
    names = np.asarray(data["system"], dtype=object)
    values = np.asarray(data["v"], dtype=np.int8)
    reviewed = np.asarray(data["reviewed"], dtype=bool)
    out = {}
    present = set(names.tolist())
    for system in [s for s in index.state.systems if s in present]:  # the run's order
        if systems is None or system in systems:
            mask = names == system
            out[system] = (values[mask], int(np.count_nonzero(reviewed[mask])))
    return out
