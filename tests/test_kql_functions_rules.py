"""The KQL function rewrites (`_kql_functions_rules`) through the embedded engine, on the
docs' examples: series_fit_line and series_fit_2lines assigned to a tuple in `extend`,
column_ifexists, and case() mixing a dynamic value with strings (Kusto.Language's result
type: string)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

pytest.importorskip("duckdb_kql")

from kql_support import kql_engine
from queryeval.engines._kql import KqlEngine

DOCS_Y = [1, 2.2, 2.5, 4.7, 5.0, 12, 10.3, 10.3, 9, 8.3, 6.2]
# series_fit_2lines' docs example, as given but for its `render timechart` and its x axis
# (`range()` of datetimes, which queryeval refuses)
DOCS_QUERY = f"""print
    id=' ',
    y=dynamic({DOCS_Y})
| extend
    (Slope, Interception, RSquare, Variance, RVariance, LineFit)=series_fit_line(y),
    (RSquare2, SplitIdx, Variance2, RVariance2, LineFit2)=series_fit_2lines(y)
| project id, y, LineFit, LineFit2"""


@pytest.fixture(scope="module")
def kql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KqlEngine]:
    with kql_engine(
        tmp_path_factory.mktemp("kqlrules") / "t.duckdb",
        "CREATE TABLE StormEvents (State VARCHAR, Injuries BIGINT)",
        "INSERT INTO StormEvents VALUES ('FLORIDA', 1), ('GEORGIA', 0)",
    ) as engine:
        yield engine


def _run(engine: KqlEngine, query: str) -> tuple[str, str, list[str], Sequence[tuple[object, ...]]]:
    run = engine.execute(query)
    if run.result is None:
        return run.outcome.kind, run.outcome.message, [], []
    return run.outcome.kind, run.outcome.message, list(run.result.columns), run.result.rows


def test_series_fits_in_extend_give_the_docs_example(kql: KqlEngine) -> None:
    import numpy as np

    kind, message, columns, rows = _run(kql, DOCS_QUERY)
    assert kind == "ok", message
    assert columns == ["id", "y", "LineFit", "LineFit2"]
    x = np.arange(1, len(DOCS_Y) + 1)
    line = np.polyval(np.polyfit(x, DOCS_Y, 1), x)  # one least-squares line (the chart's red)
    assert rows[0][2] == pytest.approx(list(line), rel=1e-9)
    # the two lines the docs' chart draws (split after the fifth value), read off the chart
    assert rows[0][3] == pytest.approx(
        [0.98, 2.03, 3.08, 4.13, 5.18, 11.95, 10.9, 9.87, 8.83, 7.79, 6.76], abs=0.05
    )


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("print y = dynamic([1, 2, 4, 3, 5]) | extend series_fit_2lines(y)", "other than as"),
        ("print y = dynamic([1, 2, 4, 3, 5]) | project (a, b) = series_fit_2lines(y)",
         "other than as"),
        ("print y = dynamic([1, 2, 4, 3, 5, 0]) | extend (r, s) = series_fit_2lines(y) "
         "| where s > 0", "which part holds the index"),
    ],
)  # fmt: skip
def test_series_fit_2lines_forms_the_docs_leave_open_are_refused(
    kql: KqlEngine, query: str, why: str
) -> None:
    kind, message, _, _ = _run(kql, query)
    assert (kind, why in message) == ("unsupported", True), message


def test_column_ifexists_gives_the_column_or_the_default(kql: KqlEngine) -> None:
    # the docs' example: no column Capital, so the State column (named State)
    kind, message, columns, rows = _run(
        kql, 'StormEvents | project column_ifexists("Capital", State)'
    )
    assert (kind, columns, sorted(rows)) == ("ok", ["State"], [("FLORIDA",), ("GEORGIA",)]), message
    query = 'StormEvents | extend s = column_ifexists("State", ""), c = column_ifexists("Capital", "-") | project s, c'  # noqa: E501
    kind, message, columns, rows = _run(kql, query)
    assert (kind, sorted(rows)) == ("ok", [("FLORIDA", "-"), ("GEORGIA", "-")]), message
    # Kusto.Language types the call as its default: a long column with a string default
    kind, message, _, _ = _run(kql, 'StormEvents | extend s = column_ifexists("Injuries", "")')
    assert (kind, "type BIGINT" in message) == ("unsupported", True), message


def test_case_mixing_a_dynamic_value_and_strings_is_a_string(kql: KqlEngine) -> None:
    # Sentinel-Queries SecurityEvent-LogonToDeviceListChanged's form: Kusto.Language's result
    # type is the common type of the values other than dynamic (string); the array's string
    # form is its JSON text
    query = ('print a = case(1 == 1, split("w1,w2", ","), 1 == 2, strcat("all"), "unknown"), '
             'b = case(1 == 2, split("w1,w2", ","), "unknown"), '
             'c = iff(false, dynamic([1]), "x")')  # fmt: skip
    kind, message, _, rows = _run(kql, query)
    assert (kind, list(rows)) == ("ok", [('["w1","w2"]', "unknown", "x")]), message
