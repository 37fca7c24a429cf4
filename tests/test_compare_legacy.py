"""legacy_recall reproduces seed 002's "results match" (expected rows found / expected rows)."""

from __future__ import annotations

import pytest

from queryeval.metrics import ResultSet, compare_results, legacy_recall
from queryeval.metrics.results import LEGACY_ROW_LIMIT


def recall(generated: tuple, expected: tuple) -> float:
    return legacy_recall(ResultSet(*generated), ResultSet(*expected))


def test_seed_scenario_identical_results_score_one() -> None:
    rows = [("Error", 3), ("Info", 10)]
    assert recall((["level", "count_"], rows), (["level", "count_"], rows)) == 1.0


def test_extra_generated_columns_are_not_penalised() -> None:
    expected = (["level"], [("Error",), ("Info",)])
    generated = (["level", "count_"], [("Info", 10), ("Error", 3)])
    assert recall(generated, expected) == 1.0


def test_row_and_field_order_do_not_matter_and_keys_are_lower_cased() -> None:
    expected = (["Level", "Count"], [("Error", 3), ("Info", 10)])
    generated = (["count", "LEVEL"], [(10, "Info"), (3, "Error")])
    assert recall(generated, expected) == 1.0


def test_values_compare_as_strings() -> None:
    expected = (["n"], [(1,), (2,)])
    assert recall((["n"], [("1",), ("2",)]), expected) == 1.0  # "1" == str(1)
    assert recall((["n"], [(1.0,), (2,)]), expected) == 0.5  # "1.0" != "1"
    assert recall((["n"], [("None",)]), (["n"], [(None,)])) == 1.0  # str(None) == "None"


def test_extra_generated_rows_and_duplicates_are_not_penalised() -> None:
    expected = (["a"], [(1,), (1,)])
    generated = (["a"], [(1,), (2,), (3,)])
    assert recall(generated, expected) == 1.0
    result = compare_results(ResultSet(*generated), ResultSet(*expected), legacy=True)
    assert result.legacy_recall == 1.0
    assert result.recall == 0.5 and result.precision == pytest.approx(1 / 3)


def test_missing_expected_rows_lower_the_score() -> None:
    expected = (["a"], [(1,), (2,), (3,), (4,)])
    generated = (["a"], [(1,), (4,)])
    assert recall(generated, expected) == 0.5


def test_missing_expected_column_means_not_found() -> None:
    assert recall((["a"], [(1,)]), (["a", "b"], [(1, 2)])) == 0.0


def test_only_the_first_hundred_rows_are_compared() -> None:
    assert LEGACY_ROW_LIMIT == 100
    expected = (["a"], [(i,) for i in range(150)])
    generated = (["a"], [(i,) for i in range(50, 150)] + [(i,) for i in range(50)])
    # expected rows 0..99 against generated rows 50..149: rows 50..99 found
    assert recall(generated, expected) == 0.5
    result = compare_results(generated, expected, legacy=True)
    assert result.legacy_recall == 0.5
    assert result.exact  # the full comparison sees every row


def test_empty_expected_result() -> None:
    assert recall((["a"], []), (["a"], [])) == 1.0
    assert recall((["a"], [(1,)]), (["a"], [])) == 0.0
