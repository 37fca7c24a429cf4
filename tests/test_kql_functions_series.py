"""series_fit_2lines and series_fit_line on the embedded KQL engine: the docs' examples
(series_fit_line's table of outputs; series_fit_2lines' series and the line its chart draws)
against a brute-force least-squares reference (numpy.polyfit on every split), and the
refusals of what the docs leave open. Called through queryeval's rows, one per output (the
rewrite of `extend (a, b) = series_fit_2lines(s)` into them: test_kql_functions_rules)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import pytest

pytest.importorskip("duckdb_kql")

from kql_support import kql_engine
from queryeval.engines._kql import KqlEngine

# series_fit_2lines' docs example, and the values of `line_fit2` its chart shows (read off
# the chart to about 0.05: 2016-12-06 00:00 to 10:00)
DOCS_Y = [1, 2.2, 2.5, 4.7, 5.0, 12, 10.3, 10.3, 9, 8.3, 6.2]
DOCS_CHART = [0.98, 2.03, 3.08, 4.13, 5.18, 11.95, 10.9, 9.87, 8.83, 7.79, 6.76]


@pytest.fixture(scope="module")
def kql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KqlEngine]:
    with kql_engine(tmp_path_factory.mktemp("kqlseries") / "t.duckdb") as engine:
        yield engine


def _reference(y: list[float]) -> dict[str, object]:
    """Every split into two parts of 2+ values, each fitted by numpy.polyfit at x = 1..m;
    the split of least residual sum of squares (the highest total r-square)."""
    import numpy as np

    values = np.array(y, dtype=float)

    def fit(part: np.ndarray) -> tuple[float, float, np.ndarray]:
        x = np.arange(1, len(part) + 1)
        slope, intercept = np.polyfit(x, part, 1)
        return slope, intercept, slope * x + intercept

    def ssr(part: np.ndarray) -> float:
        return float(((part - fit(part)[2]) ** 2).sum())

    k = min(range(2, len(y) - 1), key=lambda i: ssr(values[:i]) + ssr(values[i:]))
    left, right = values[:k], values[k:]
    total = ssr(left) + ssr(right)
    sst = float(((values - values.mean()) ** 2).sum())
    out: dict[str, object] = {
        "rsquare": 1 - total / sst,
        "variance": statistics.variance(y),
        "rvariance": total / (len(y) - 1),
        "line_fit": [*fit(left)[2], *fit(right)[2]],
        "left_interception": fit(left)[1],
    }
    for side, part in (("left", left), ("right", right)):
        part_sst = float(((part - part.mean()) ** 2).sum())
        out[f"{side}_rsquare"] = 1 - ssr(part) / part_sst
        out[f"{side}_slope"] = fit(part)[0]
        out[f"{side}_variance"] = statistics.variance(part.tolist())
        out[f"{side}_rvariance"] = ssr(part) / (len(part) - 1)
    return out


def _outcome(engine: KqlEngine, query: str) -> tuple[str, str, tuple[object, ...] | None]:
    run = engine.execute(query)
    row = tuple(run.result.rows[0]) if run.result is not None and run.result.rows else None
    return run.outcome.kind, run.outcome.message, row


def test_series_fit_2lines_gives_the_docs_example(kql: KqlEngine) -> None:
    expected = _reference(DOCS_Y)
    names = list(expected)
    calls = ", ".join(f"{n} = queryeval_fit2_{n}(y)" for n in names)
    kind, message, row = _outcome(kql, f"print y = dynamic({DOCS_Y}) | project {calls}")
    assert kind == "ok", message
    assert row is not None
    got = dict(zip(names, row, strict=True))
    for name in names:
        assert got[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-12), name
    # the line the docs' chart draws, and the split it shows (5 values, then 6)
    assert got["line_fit"] == pytest.approx(DOCS_CHART, abs=0.05)
    assert got["variance"] == pytest.approx(13.894)


def test_series_fit_line_gives_the_docs_outputs(kql: KqlEngine) -> None:
    y = [2, 5, 6, 8, 11, 15, 17, 18, 25, 26, 30, 30]
    calls = ", ".join(
        f"{n} = queryeval_fit1_{n}(y)"
        for n in ("rsquare", "slope", "variance", "rvariance", "interception", "line_fit")
    )
    kind, message, row = _outcome(kql, f"print y = dynamic({y}) | project {calls}")
    assert kind == "ok", message
    assert row is not None
    # the docs' table: RSquare 0.982, Slope 2.730, Variance 98.628, RVariance 1.686,
    # Interception -1.666, LineFit 1.064, 3.7945, ..., 31.102
    assert row[:5] == pytest.approx((0.982, 2.730, 98.628, 1.686, -1.666), abs=0.001)
    docs_line = [1.064, 3.7945, 6.526, 9.256, 11.987, 14.718, 17.449, 20.180, 22.910, 25.641,
                 28.371, 31.102]  # fmt: skip
    assert row[5] == pytest.approx(docs_line, abs=0.001)


@pytest.mark.parametrize(
    ("series", "output", "why"),
    [
        (DOCS_Y, "split_idx", "which part holds the index"),
        (DOCS_Y, "right_interception", "x origin"),
        ([2, 2, 2, 2, 2], "line_fit", "constant series"),
        ([0, 1, 0, 1, 0, 1], "line_fit", "two splits fit equally well"),
        ([1, 2, 3, 4, 3, 2, 1, 0], "rsquare", "two splits fit equally well"),
        ([0, 0, 0, 0, 0, 10], "line_fit", "split off one value"),
        ([1, 2, 4], "line_fit", "fewer than 4"),
        ([1, 2, None, 4, 5], "line_fit", "null or not a number"),
    ],
)
def test_series_fit_2lines_refuses_what_the_docs_leave_open(
    kql: KqlEngine, series: list[float | None], output: str, why: str
) -> None:
    literal = str(series).replace("None", "dynamic(null)")
    kind, message, _ = _outcome(kql, f"print v = queryeval_fit2_{output}(dynamic({literal}))")
    assert (kind, why in message) == ("unsupported", True), message
