"""`queryeval history RUNS_DIR...`: one self-contained HTML page over many stored runs: the
runs with their suite, configuration hash, systems and headline figures; a trend chart per
metric over time; and the side-by-side diff of two runs (the paired statistics of
`queryeval compare`: flipped cases, metric differences with CIs, McNemar's test; and the
pass rate per tag of both).

Diffs are computed here, in Python, for every pair of runs up to `all_pairs_up_to` runs;
above that, for consecutive runs and for each run against the latest. The page picks one
with two selects and shows it without any request. `diff` computes one pair (default: from
the records in memory; `queryeval history` passes the viewer's index-based comparison,
which gives the same statistics without loading the records). A trend line is one system
of one suite: runs of different suites are never joined into one line, even where their
systems share a name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from queryeval import __version__
from queryeval.errors import InputError
from queryeval.log import RESULTS, RunLog, read_log
from queryeval.reports._svg import Series, colour, line_chart
from queryeval.stats import compare_records, headline_metrics

_TREND_METRICS_MAX = 24  # charts: pass rate and scorer means first, then sub-metrics

Diff = Callable[[RunLog, RunLog, float, int], dict[str, Any]]
"""One pair's comparison (run A, run B, alpha, seed) as `RunComparison.as_dict()` gives it;
InputError when the runs cannot be compared."""


def records_diff(a: RunLog, b: RunLog, alpha: float, seed: int) -> dict[str, Any]:
    """The comparison of run B with run A from their records in memory."""
    return compare_records(a.records, b.records, alpha=alpha, seed=seed).as_dict()


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """Run directories among `paths`: each is a run directory (it holds results.jsonl) or a
    folder whose sub-folders are; InputError when one holds no run."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / RESULTS).is_file():
            found.append(p)
            continue
        inside = sorted(d for d in p.iterdir() if (d / RESULTS).is_file()) if p.is_dir() else []
        if not inside:
            raise InputError("no run directory here (no results.jsonl in it or below it)", path=p)
        found.extend(inside)
    return list(dict.fromkeys(found))


def _when(run: RunLog) -> str:
    info = run.info or {}
    stamp = info.get("finished_at") or info.get("started_at")
    if stamp:
        return str(stamp)
    assert run.path is not None
    mtime = (run.path / RESULTS).stat().st_mtime
    return datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds")


def _pairs(n: int, all_up_to: int) -> list[tuple[int, int]]:
    if n <= all_up_to:
        return [(a, b) for b in range(n) for a in range(b)]
    pairs = {(i, i + 1) for i in range(n - 1)} | {(i, n - 1) for i in range(n - 1)}
    return sorted(pairs)


def _tag_deltas(a: RunLog, b: RunLog, system_a: str, system_b: str) -> list[dict[str, Any]]:
    """Pass rate per tag in both runs' summaries (tags in either), with B - A."""
    summary_a: Mapping[str, Any] = a.summary or {}
    summary_b: Mapping[str, Any] = b.summary or {}
    tags_a = (summary_a.get("systems", {}).get(system_a) or {}).get("by_tag") or {}
    tags_b = (summary_b.get("systems", {}).get(system_b) or {}).get("by_tag") or {}
    rows: list[dict[str, Any]] = []
    for tag in sorted(set(tags_a) | set(tags_b)):
        ra = (tags_a.get(tag) or {}).get("pass_rate")
        rb = (tags_b.get(tag) or {}).get("pass_rate")
        delta = rb - ra if ra is not None and rb is not None else None
        rows.append(
            {
                "tag": tag,
                "cases_a": (tags_a.get(tag) or {}).get("cases"),
                "cases_b": (tags_b.get(tag) or {}).get("cases"),
                "a": ra,
                "b": rb,
                "delta": delta,
            }
        )
    rows.sort(key=lambda r: (r["delta"] is None, -abs(r["delta"] or 0.0), r["tag"]))
    return rows


def _diff(a: RunLog, b: RunLog, alpha: float, seed: int, diff: Diff) -> dict[str, Any]:
    """The comparison of run B with run A, or why there is none (no common systems)."""
    try:
        data = diff(a, b, alpha, seed)
    except InputError as exc:
        return {"error": exc.message}
    for pair in data["systems"]:
        pair["tags"] = _tag_deltas(a, b, pair["system_a"], pair["system_b"])
    return data


def _config_hash(run: RunLog) -> str:
    info = run.info or {}
    if info.get("config_hash"):
        return str(info["config_hash"])[:12]
    config = orjson_dumps(info.get("config")) if info.get("config") else b""
    return hashlib.sha256(config).hexdigest()[:12] if config else "—"


def orjson_dumps(value: Any) -> bytes:
    """Stable JSON bytes (sorted keys)."""
    import orjson

    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _metric_order(names: set[str]) -> list[str]:
    return sorted(names, key=lambda m: (m != "pass_rate", "." in m, m.startswith("latency"), m))


def history_context(
    paths: Sequence[str | Path],
    *,
    title: str = "queryeval — run history",
    alpha: float = 0.05,
    seed: int = 0,
    all_pairs_up_to: int = 12,
    diff: Diff | None = None,
) -> dict[str, Any]:
    """Everything the history page shows, from the run directories in `paths`."""
    runs = [read_log(p) for p in find_runs(paths)]
    runs.sort(key=_when)
    names = [r.path.name if r.path is not None else r.label for r in runs]
    labels = [f"{i + 1}. {n}" for i, n in enumerate(names)]
    metrics_by_run: list[dict[str, dict[str, float]]] = []
    rows: list[dict[str, Any]] = []
    for i, run in enumerate(runs):
        summary: Mapping[str, Any] = run.summary or {}
        systems = summary.get("systems") or {}
        per_system = {s: headline_metrics(e) for s, e in systems.items()}
        if not systems:  # an unfinished run: its records' pass rate only
            per_system = {}
        metrics_by_run.append(per_system)
        rows.append(
            {
                "index": i,
                "label": labels[i],
                "path": str(run.path),
                "when": _when(run),
                "suite": summary.get("suite") or (run.info or {}).get("suite") or "—",
                "config_hash": _config_hash(run),
                "cases": summary.get("n_cases"),
                "review": bool(summary.get("review")),
                "systems": [
                    {
                        "name": s,
                        "pass_rate": m.get("pass_rate"),
                        "means": {k: v for k, v in m.items() if k != "pass_rate" and "." not in k},
                    }
                    for s, m in per_system.items()
                ],
            }
        )
    metric_names = _metric_order({m for run in metrics_by_run for s in run.values() for m in s})
    metric_names = metric_names[:_TREND_METRICS_MAX]
    suites = [str(r["suite"]) for r in rows]
    several = len(set(suites)) > 1
    trends = []
    # one chart per suite and metric, over that suite's runs: runs of different suites are
    # never joined into one line, even where their systems share a name
    for suite in dict.fromkeys(suites):
        members = [i for i, name in enumerate(suites) if name == suite]
        system_names = list(dict.fromkeys(s for i in members for s in metrics_by_run[i]))
        for metric in metric_names:
            series = [
                Series(s, [metrics_by_run[i].get(s, {}).get(metric) for i in members], colour(k))
                for k, s in enumerate(system_names)
                if any(metric in metrics_by_run[i].get(s, {}) for i in members)
            ]
            if not series:
                continue
            trends.append(
                {
                    "metric": f"{suite}: {metric}" if several else metric,
                    "suite": suite,
                    "svg": Markup(line_chart([labels[i] for i in members], series, label=metric)),
                }
            )
    diffs = [
        {"a": a, "b": b, **_diff(runs[a], runs[b], alpha, seed, diff or records_diff)}
        for a, b in _pairs(len(runs), all_pairs_up_to)
    ]
    columns = sorted({k for r in rows for s in r["systems"] for k in s["means"]})
    return {
        "title": title,
        "version": __version__,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": rows,
        "labels": labels,
        "mean_columns": columns,
        "trends": trends,
        "diffs": diffs,
        "default_pair": (len(runs) - 2, len(runs) - 1) if len(runs) > 1 else None,
        "alpha": alpha,
        "all_pairs_up_to": all_pairs_up_to,
    }


def write_history(
    paths: Sequence[str | Path],
    out: str | Path,
    *,
    title: str = "queryeval — run history",
    alpha: float = 0.05,
    seed: int = 0,
    all_pairs_up_to: int = 12,
    diff: Diff | None = None,
) -> Path:
    """Write the history page of the runs in `paths` (run directories or folders of them)
    to `out`; returns its path."""
    context = history_context(
        paths, title=title, alpha=alpha, seed=seed, all_pairs_up_to=all_pairs_up_to, diff=diff
    )
    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(_filters())
    html = files("queryeval.reports") / "html"
    css = (html / "report.css").read_text(encoding="utf-8")
    template = env.from_string((html / "history.html").read_text(encoding="utf-8"))
    page = template.render(css=Markup(css), **context)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def _filters() -> dict[str, Any]:
    def num(v: Any, digits: int = 3) -> str:
        return "—" if v is None else f"{v:.{digits}f}"

    def signed(v: Any) -> str:
        return "—" if v is None else f"{v:+.3f}"

    def ci(c: Mapping[str, Any] | None) -> str:
        if not c or c.get("low") is None:
            return "—"
        return f"[{c['low']:+.3f}, {c['high']:+.3f}]"

    def pval(v: Any) -> str:
        if v is None:
            return "—"
        return "< 0.001" if v < 0.001 else f"{v:.3f}"

    return {"num": num, "signed": signed, "dci": ci, "pval": pval}
