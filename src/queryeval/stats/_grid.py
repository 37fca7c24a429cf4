"""Grid-search analysis over per-configuration, per-case scores: leaderboard with seeded
bootstrap confidence intervals, and a side-by-side of evaluation methods (seed 004)."""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

# config name -> case id -> value (None: unscored/error, never counted as 0)
ConfigScores = Mapping[str, Mapping[str, float | None]]


@dataclass(frozen=True)
class ConfigResult:
    """One configuration's mean over its scored cases, the bootstrap CI, and its rank."""

    config: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    unscored: int
    rank: int | None
    p_best: float | None


@dataclass(frozen=True)
class Leaderboard:
    """Configurations best first; `p_best` is the share of bootstrap resamples (of cases,
    drawn jointly for all configurations) in which each configuration had the top mean."""

    rows: tuple[ConfigResult, ...]
    confidence: float
    n_resamples: int
    seed: int

    @property
    def best(self) -> str | None:
        """The top configuration (None when nothing was scored)."""
        return self.rows[0].config if self.rows and self.rows[0].mean is not None else None

    def top(self, n: int = 5) -> list[str]:
        """The names of the n best scored configurations."""
        return [r.config for r in self.rows if r.mean is not None][:n]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return {
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "rows": [asdict(r) for r in self.rows],
        }


def leaderboard(
    scores: ConfigScores,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Leaderboard:
    """Rank configurations by mean score, with percentile bootstrap CIs over cases.

    Cases are resampled jointly for all configurations (the same draws for each), which gives
    every CI and `p_best` from one set of draws; scipy.stats.bootstrap resamples one statistic
    at a time, so it cannot give `p_best`. Ranks are competition ranks (1, 2, 2, 4).
    """
    configs = list(scores)
    case_ids = sorted({c for per in scores.values() for c in per})
    if not configs:
        return Leaderboard((), confidence, n_resamples, seed)
    matrix = np.full((len(configs), len(case_ids)), np.nan)
    col = {c: j for j, c in enumerate(case_ids)}
    for i, name in enumerate(configs):
        for case, value in scores[name].items():
            if value is not None and not math.isnan(value):
                matrix[i, col[case]] = value
    counts = np.sum(~np.isnan(matrix), axis=1)
    means = [float(np.nanmean(row)) if n else None for row, n in zip(matrix, counts, strict=True)]

    boot = _bootstrap_means(matrix, n_resamples, seed) if case_ids and n_resamples else None
    alpha = (1 - confidence) / 2
    p_best: list[float | None] = [None] * len(configs)
    lows: list[float | None] = [None] * len(configs)
    highs: list[float | None] = [None] * len(configs)
    if boot is not None:
        filled = np.where(np.isnan(boot), -np.inf, boot)
        top = filled.max(axis=0)
        winners = (filled == top) & np.isfinite(top)
        share = winners / np.maximum(winners.sum(axis=0), 1)  # ties split the win
        for i in range(len(configs)):
            if counts[i]:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    lo, hi = np.nanpercentile(boot[i], [100 * alpha, 100 * (1 - alpha)])
                lows[i], highs[i] = float(lo), float(hi)
                p_best[i] = float(share[i].mean())

    order = sorted(
        range(len(configs)),
        key=lambda i: (means[i] is None, -(means[i] or 0.0), configs[i]),
    )
    rows: list[ConfigResult] = []
    rank = 0
    for pos, i in enumerate(order):
        if means[i] is not None and (pos == 0 or means[order[pos - 1]] != means[i]):
            rank = pos + 1
        rows.append(
            ConfigResult(
                config=configs[i],
                mean=means[i],
                ci_low=lows[i],
                ci_high=highs[i],
                n=int(counts[i]),
                unscored=len(scores[configs[i]]) - int(counts[i]),
                rank=rank if means[i] is not None else None,
                p_best=p_best[i],
            )
        )
    return Leaderboard(tuple(rows), confidence, n_resamples, seed)


def _bootstrap_means(matrix: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """(configs, resamples) means over resampled cases; NaN where a resample has no value."""
    rng = np.random.default_rng(seed)
    n_cases = matrix.shape[1]
    idx = rng.integers(0, n_cases, size=(n_resamples, n_cases))
    out = np.empty((matrix.shape[0], n_resamples))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resample -> NaN, on purpose
        for i, row in enumerate(matrix):
            out[i] = np.nanmean(row[idx], axis=1)
    return out


@dataclass(frozen=True)
class RankCorrelation:
    """Agreement of two methods' orderings of the configurations they both scored."""

    method_a: str
    method_b: str
    n_configs: int
    spearman: float | None
    kendall: float | None


@dataclass(frozen=True)
class MethodComparison:
    """Side-by-side of evaluation methods over the same grid."""

    leaderboards: dict[str, Leaderboard]
    picks: dict[str, str | None]
    correlations: tuple[RankCorrelation, ...]
    distributions: dict[str, dict[str, int]]
    share_at_half: dict[str, float | None]
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return {
            "picks": self.picks,
            "correlations": [asdict(c) for c in self.correlations],
            "distributions": self.distributions,
            "share_at_0_5": self.share_at_half,
            "leaderboards": {m: b.to_dict() for m, b in self.leaderboards.items()},
            "note": self.note,
        }


def compare_methods(
    by_method: Mapping[str, ConfigScores],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> MethodComparison:
    """Which configuration each method picks, Spearman and Kendall rank correlation of the
    configuration means between every pair of methods, and each method's distribution of
    case values (a keyword_legacy run shows its 0.5 plateau here; binary methods show none)."""
    boards = {
        m: leaderboard(s, confidence=confidence, n_resamples=n_resamples, seed=seed)
        for m, s in by_method.items()
    }
    distributions: dict[str, dict[str, int]] = {}
    share: dict[str, float | None] = {}
    for m, per_config in by_method.items():
        values = [v for per in per_config.values() for v in per.values() if v is not None]
        dist = Counter(f"{v:g}" for v in values)
        distributions[m] = dict(sorted(dist.items(), key=lambda kv: float(kv[0])))
        share[m] = dist.get("0.5", 0) / len(values) if values else None
    correlations, note = _correlations(boards)
    return MethodComparison(
        leaderboards=boards,
        picks={m: b.best for m, b in boards.items()},
        correlations=correlations,
        distributions=distributions,
        share_at_half=share,
        note=note,
    )


def _correlations(boards: Mapping[str, Leaderboard]) -> tuple[tuple[RankCorrelation, ...], str]:
    try:
        from scipy.stats import kendalltau, spearmanr
    except ImportError:
        return (), "rank correlations need scipy (pip install 'queryeval[rag]')"
    methods = list(boards)
    out: list[RankCorrelation] = []
    for a_i, a in enumerate(methods):
        for b in methods[a_i + 1 :]:
            ma = {r.config: r.mean for r in boards[a].rows if r.mean is not None}
            mb = {r.config: r.mean for r in boards[b].rows if r.mean is not None}
            common = sorted(set(ma) & set(mb))
            rho = tau = None
            if len(common) >= 2:
                xa = [ma[c] for c in common]
                xb = [mb[c] for c in common]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # constant input -> nan, reported as None
                    rho = _finite(spearmanr(xa, xb).statistic)
                    tau = _finite(kendalltau(xa, xb).statistic)
            out.append(RankCorrelation(a, b, len(common), rho, tau))
    return tuple(out), ""


def _finite(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def format_leaderboard(board: Leaderboard, *, title: str = "", limit: int | None = None) -> str:
    """A plain-text table of the leaderboard (for scripts and logs)."""
    rows = board.rows[:limit]
    width = max([len("configuration"), *(len(r.config) for r in rows)])
    ci_head = f"{round(board.confidence * 100)}% CI"
    lines = [title] if title else []
    lines.append(
        f"{'rank':>4}  {'configuration':<{width}}  {'mean':>6}  {ci_head:<16} {'n':>4}  p_best"
    )
    for r in rows:
        mean = f"{r.mean:.3f}" if r.mean is not None else "-"
        ci = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low is not None else "-"
        pb = f"{r.p_best:.2f}" if r.p_best is not None else "-"
        rank = str(r.rank) if r.rank is not None else "-"
        lines.append(f"{rank:>4}  {r.config:<{width}}  {mean:>6}  {ci:<16} {r.n:>4}  {pb}")
    return "\n".join(lines)


def base_system(config_name: str) -> str:
    """`rag[top_k=3,chunk_size=50]` -> `rag` (the runner names grid points this way)."""
    return config_name.split("[", 1)[0]


def scores_by_config(
    records: Iterable[Mapping[str, Any]], label: str
) -> dict[str, dict[str, float | None]]:
    """config -> case id -> value of scorer `label` from run records (None unless status ok)."""
    out: dict[str, dict[str, float | None]] = {}
    for rec in records:
        score = (rec.get("scores") or {}).get(label)
        if score is None:
            continue
        ok = score.get("status", "ok") == "ok" and score.get("value") is not None
        out.setdefault(rec["system"], {})[str(rec["case_id"])] = (
            float(score["value"]) if ok else None
        )
    return out


def grid_section(
    records: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
    *,
    seed: int = 0,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, MethodComparison]:
    """For every system run as a grid (two or more configurations): the leaderboard of each
    scorer label and the side-by-side of all labels, from run records."""
    groups: dict[str, list[str]] = {}
    for rec in records:
        configs = groups.setdefault(base_system(rec["system"]), [])
        if rec["system"] not in configs:
            configs.append(rec["system"])
    per_label = {label: scores_by_config(records, label) for label in labels}
    out: dict[str, MethodComparison] = {}
    for base, configs in groups.items():
        if len(configs) < 2:
            continue
        by_method = {label: {c: per_label[label].get(c, {}) for c in configs} for label in labels}
        out[base] = compare_methods(
            by_method, confidence=confidence, n_resamples=n_resamples, seed=seed
        )
    return out
