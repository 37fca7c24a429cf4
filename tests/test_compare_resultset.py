"""ResultSet: constructors, immutability, Arrow backing and coercion of each comparison side."""

from __future__ import annotations

import pyarrow as pa
import pytest

from queryeval.metrics import ResultSet
from queryeval.metrics.results import as_result_set


def test_rows_and_columns_are_tuples() -> None:
    result = ResultSet(["a", "b"], [[1, "x"], (2, "y")])
    assert result.columns == ("a", "b")
    assert result.rows == ((1, "x"), (2, "y"))
    assert result.num_rows == len(result) == 2
    assert result.num_columns == 2


def test_row_width_is_checked() -> None:
    with pytest.raises(ValueError, match="row 1 has 1 values but there are 2 columns"):
        ResultSet(["a", "b"], [(1, 2), (3,)])


def test_is_immutable() -> None:
    result = ResultSet(["a"], [(1,)])
    with pytest.raises(AttributeError):
        result.columns = ("b",)  # type: ignore[misc]


def test_from_dicts_unions_keys_in_first_seen_order() -> None:
    result = ResultSet.from_dicts([{"a": 1}, {"b": 2, "a": 3}])
    assert result.columns == ("a", "b")
    assert result.rows == ((1, None), (3, 2))


def test_from_arrow_keeps_the_table_and_materialises_rows_lazily() -> None:
    table = pa.table({"a": [1, None], "b": ["x", "y"]})
    result = ResultSet.from_arrow(table)
    assert result.arrow is table
    assert result.columns == ("a", "b")
    assert result.num_rows == 2
    assert result.rows == ((1, "x"), (None, "y"))
    assert result.column_values(1) == ["x", "y"]
    assert result.head(1).rows == ((1, "x"),)
    assert result == ResultSet(["a", "b"], [(1, "x"), (None, "y")])


def test_from_arrow_record_batch() -> None:
    batch = pa.record_batch({"a": [1, 2]})
    assert ResultSet.from_arrow(batch).rows == ((1,), (2,))


def test_to_dicts_and_head() -> None:
    result = ResultSet(["a", "b"], [(1, 2), (3, 4), (5, 6)])
    assert result.to_dicts(limit=2) == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def test_empty_result_has_columns_but_no_rows() -> None:
    result = ResultSet(["a", "b"], [])
    assert result.rows == ()
    assert result.column_values(0) == ()


@pytest.mark.parametrize(
    "value",
    [
        (["a"], [(1,)]),
        [["a"], [[1]]],
        [{"a": 1}],
        pa.table({"a": [1]}),
    ],
)
def test_as_result_set_accepts_each_form(value: object) -> None:
    assert as_result_set(value).rows == ((1,),)


def test_as_result_set_names_the_side_in_the_error() -> None:
    with pytest.raises(TypeError, match="pred: expected a ResultSet"):
        as_result_set(42, "pred")
