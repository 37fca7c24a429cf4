"""The paired comparison of `queryeval compare` computed from two runs' indexes: the same
statistics as `queryeval.stats.compare_records` (cases paired by id per pair of systems,
the last record of a case counting, in run A's order; paired bootstrap CIs; McNemar's
test on pass/fail; flipped cases) read from columns instead of every record, so two
200,000-case runs compare in seconds within a few hundred MB.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from queryeval.errors import InputError
from queryeval.stats import (
    BETTER,
    NO_DIFFERENCE,
    WORSE,
    MetricComparison,
    RunComparison,
    SystemComparison,
    mcnemar_test,
    mean_ci,
    pair_systems,
)
from queryeval.viewer._index import RunIndex
from queryeval.viewer._query import _q, _source, connect

PASS = "pass"


def _metric_name(column: str) -> str:
    return column[2:]


def _order(m: str) -> tuple[bool, bool, str]:
    return (m != PASS, "." in m, m)


def _columns(index: RunIndex, review: Mapping[str, Any] | None, system: str) -> dict[str, Any]:
    """The case ids of one system (in file order; the last record of a case counts) and
    every metric's values (NaN where none), with the review's overrides in place."""
    con = connect()
    source, first = _source(index, con, review, "s")
    wanted = list(index.state.columns)
    select = "".join(f", {_q(c)}" for c in wanted)
    rows = con.sql(
        "SELECT case_id, CASE WHEN verdict THEN 1.0::DOUBLE "
        f"WHEN NOT verdict THEN 0.0::DOUBLE END AS p"
        f"{select} FROM {source} WHERE system = ? ORDER BY first_row",
        params=[*first, system],
    ).to_arrow_table()
    ids = rows.column("case_id").to_numpy(zero_copy_only=False)
    values = {PASS: rows.column("p").to_numpy(zero_copy_only=False).astype(float)}
    for c in wanted:
        values[_metric_name(c)] = rows.column(c).to_numpy(zero_copy_only=False).astype(float)
    # an override keeps the score's details (sub-metrics included), as the runner's does
    return {"ids": ids, "values": values}


def _compare_metric(
    metric: str, xa: np.ndarray, xb: np.ndarray, alpha: float, seed: int, resamples: int
) -> tuple[MetricComparison, Any]:
    if not len(xa):
        return MetricComparison(
            metric, 0, None, None, None, None, None, "none", NO_DIFFERENCE
        ), None
    diffs = xb - xa
    ci = mean_ci(diffs, level=1 - alpha, seed=seed, resamples=resamples)
    mean_a, mean_b, diff = float(xa.mean()), float(xb.mean()), float(diffs.mean())
    if metric == PASS:
        test = mcnemar_test(int(np.sum((xa == 1) & (xb == 0))), int(np.sum((xa == 0) & (xb == 1))))
        verdict = NO_DIFFERENCE
        if test.p_value < alpha and test.b != test.c:
            verdict = BETTER if test.c > test.b else WORSE
        comp = MetricComparison(
            metric, len(xa), mean_a, mean_b, diff, ci, test.p_value, f"McNemar ({test.method})",
            verdict,
        )  # fmt: skip
        return comp, test
    verdict = NO_DIFFERENCE
    if ci is not None and ci.low > 1e-12:
        verdict = BETTER
    elif ci is not None and ci.high < -1e-12:
        verdict = WORSE
    return MetricComparison(
        metric, len(xa), mean_a, mean_b, diff, ci, None, "paired bootstrap", verdict
    ), None


def compare_indexed(
    a: RunIndex,
    b: RunIndex,
    *,
    review_a: Mapping[str, Any] | None = None,
    review_b: Mapping[str, Any] | None = None,
    systems: Sequence[str | tuple[str, str]] | None = None,
    metrics: Sequence[str] | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = 2000,
    label_a: str = "A",
    label_b: str = "B",
) -> RunComparison:
    """Compare run B with run A (the reference) from their indexes; the result of
    `queryeval.stats.compare_runs` on the same runs."""
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}", where="--alpha")
    results = []
    for sys_a, sys_b in pair_systems(a.state.systems, b.state.systems, systems):
        ca, cb = _columns(a, review_a, sys_a), _columns(b, review_b, sys_b)
        ids_a, ids_b = ca["ids"], cb["ids"]
        # pairing by id with dicts (numpy's isin on text compares every pair of ids)
        position_b = {cid: i for i, cid in enumerate(ids_b.tolist())}
        where_b = np.fromiter(
            (position_b.get(c, -1) for c in ids_a.tolist()), dtype=np.int64, count=len(ids_a)
        )
        in_b = where_b >= 0
        paired = ids_a[in_b]
        take_b = where_b[in_b]
        set_a = set(ids_a.tolist())
        va = {m: v[in_b] for m, v in ca["values"].items()}
        vb = {m: v[take_b] for m, v in cb["values"].items()}
        available = sorted(
            (m for m in va if m in vb and bool(np.any(~np.isnan(va[m]) & ~np.isnan(vb[m])))),
            key=_order,
        )
        chosen = list(metrics) if metrics else available
        unknown = [m for m in chosen if m not in available]
        if unknown and len(paired):
            raise InputError(
                f"no paired values for metric(s) {', '.join(unknown)}; "
                f"available: {', '.join(available) or 'none'}",
                where="--metric",
            )
        comps, mcnemar = [], None
        for name in chosen:
            x, y = va.get(name), vb.get(name)
            if x is None or y is None:
                both = np.zeros(0, dtype=bool)
                x = y = np.zeros(0)
            else:
                both = ~np.isnan(x) & ~np.isnan(y)
            comp, test = _compare_metric(name, x[both], y[both], alpha, seed, resamples)
            comps.append(comp)
            mcnemar = test or mcnemar
        pa, pb = va[PASS], vb[PASS]
        fixed = tuple(paired[(pa == 0.0) & (pb == 1.0)].tolist())
        broken = tuple(paired[(pa == 1.0) & (pb == 0.0)].tolist())
        results.append(
            SystemComparison(
                system_a=sys_a,
                system_b=sys_b,
                n_a=len(ids_a),
                n_b=len(ids_b),
                n_paired=len(paired),
                only_a=tuple(ids_a[~in_b].tolist()),
                only_b=tuple(c for c in ids_b.tolist() if c not in set_a),
                metrics=tuple(comps),
                mcnemar=mcnemar,
                fixed=fixed,
                broken=broken,
                primary=chosen[0] if chosen else None,
            )
        )
    return RunComparison(label_a, label_b, alpha, seed, tuple(results))


def side_by_side(
    a: RunIndex,
    b: RunIndex,
    system_a: str,
    system_b: str,
    *,
    review_a: Mapping[str, Any] | None = None,
    review_b: Mapping[str, Any] | None = None,
    offset: int = 0,
    limit: int = 50,
    only_flipped: bool = False,
) -> dict[str, Any]:
    """Per case, both sides' status, reason, score and prediction: flipped cases (pass on
    one side, fail on the other) first, then the rest, in run A's order; one page."""
    con = connect()
    left, params_l = _source(a, con, review_a, "l")
    right, params_r = _source(b, con, review_b, "r")
    flip = "(l.verdict IS NOT NULL AND r.verdict IS NOT NULL AND l.verdict <> r.verdict)"
    where = f"WHERE {flip}" if only_flipped else ""
    body = (
        f"FROM (SELECT * FROM {left} WHERE system = ?) l "
        f"FULL JOIN (SELECT * FROM {right} WHERE system = ?) r ON l.case_id = r.case_id {where}"
    )
    params = [*params_l, system_a, *params_r, system_b]
    total, flipped = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {flip}) {body}", params
    ).fetchone()
    rows = con.execute(
        f"SELECT coalesce(l.case_id, r.case_id), l.verdict, r.verdict, l.reason, r.reason, "
        f"l.prediction, r.prediction, l.error IS NOT NULL, r.error IS NOT NULL, {flip} {body} "
        f"ORDER BY {flip} DESC, l.first_row NULLS LAST, r.first_row "
        f"LIMIT {int(limit)} OFFSET {int(offset)}",
        params,
    ).fetchall()

    def status(verdict: bool | None, error: bool | None) -> str | None:
        if error:
            return "error"
        return None if verdict is None else "pass" if verdict else "fail"

    return {
        "total": int(total),
        "flipped": int(flipped),
        "offset": offset,
        "limit": limit,
        "rows": [
            {
                "case_id": r[0],
                "a": {"status": status(r[1], r[7]), "reason": r[3], "prediction": r[5]},
                "b": {"status": status(r[2], r[8]), "reason": r[4], "prediction": r[6]},
                "flipped": bool(r[9]),
            }
            for r in rows
        ],
    }


def indexed(run_dir: str | Path, root: Path | None = None) -> RunIndex:
    """The up-to-date index of a run directory, for `compare` and `history`: InputError
    when it holds no results.jsonl, or on its first line that is not a record (as the log's
    reader says; the viewer shows such a run with the line left out)."""
    from queryeval.log import RESULTS

    path = Path(run_dir)
    if not (path / RESULTS).is_file():
        raise InputError("not a run directory (no results.jsonl)", path=path)
    index = RunIndex(path, root)
    try:
        state = index.refresh()
    except OSError as exc:
        raise InputError(
            f"cannot write the run's index ({exc.strerror}); set QUERYEVAL_INDEX_DIR to a "
            "writable folder",
            path=index.folder,
        ) from None
    if state.bad:
        first = state.bad[0]
        raise InputError(
            f"corrupt record in results ({first['why']})", path=path / RESULTS, line=first["line"]
        )
    return index


def compare_dirs(
    run_a: str | Path,
    run_b: str | Path,
    *,
    root: Path | None = None,
    **options: Any,
) -> RunComparison:
    """`queryeval compare`'s comparison of two run directories (a human review's overrides,
    review.json, in place) from their indexes; the labels are the paths, as
    `queryeval.stats.compare_runs` gives them."""
    from queryeval.log import REVIEW, read_json

    a, b = indexed(run_a, root), indexed(run_b, root)
    return compare_indexed(
        a, b, review_a=read_json(Path(run_a), REVIEW), review_b=read_json(Path(run_b), REVIEW),
        label_a=str(run_a), label_b=str(run_b), **options,
    )  # fmt: skip


def index_diff(root: Path | None = None) -> Any:
    """A `reports` history diff (run A, run B, alpha, seed) -> comparison dict computed from
    the runs' indexes (each built once)."""
    cache: dict[Path, RunIndex] = {}

    def diff(a: Any, b: Any, alpha: float, seed: int) -> dict[str, Any]:
        sides = []
        for run in (a, b):
            if run.path not in cache:
                cache[run.path] = indexed(run.path, root)
            sides.append(cache[run.path])
        return compare_indexed(
            sides[0], sides[1], review_a=a.review, review_b=b.review, alpha=alpha, seed=seed
        ).as_dict()

    return diff
