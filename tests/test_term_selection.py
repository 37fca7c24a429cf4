"""SDMX term selection (seed 001): the worked example, every policy, and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.metrics import term_selection

DS = "IMF.RES:WEO"


def sel(dims: dict[str, list[str] | list[tuple[str, str]]], ds: str = DS) -> list[dict]:
    out = []
    for name, values in dims.items():
        terms = [{"id": v} if isinstance(v, str) else {"id": v[0], "name": v[1]} for v in values]
        out.append({"dimension_name": name, "values": terms})
    return [{"dataset_id": ds, "dimensions": out}]


SEED_TARGET = sel({"INDICATOR": [("GDP", "gross domestic product"), ("GDPPC", "GDP per capita")]})
SEED_SELECTED = sel(
    {
        "INDICATOR": [
            ("GDP", "gross domestic product"),
            ("GDPPC", "GDP per capita"),
            ("GDP_CONST", "gross domestic product constant prices"),
        ]
    }
)


def test_seed_worked_example() -> None:
    r = term_selection(SEED_SELECTED, SEED_TARGET)
    dim = r.per_dimension["INDICATOR"]
    assert [t.id for t in dim.true_positives] == ["GDP", "GDPPC"]
    assert [t.id for t in dim.false_positives] == ["GDP_CONST"]
    assert dim.false_negatives == ()
    assert dim.precision == pytest.approx(2 / 3)
    assert round(dim.precision, 2) == 0.67
    assert dim.recall == 1.0
    assert r.macro_precision == pytest.approx(2 / 3)
    assert r.macro_recall == 1.0


def test_seed_details_cell_reads_as_in_the_seed() -> None:
    block = term_selection(SEED_SELECTED, SEED_TARGET).per_dimension["INDICATOR"].details_text()
    assert block == (
        "[recall: 1.00, precision: 0.67]\n"
        "True Positives [2]\n"
        "  * GDP: gross domestic product\n"
        "  * GDPPC: GDP per capita\n"
        "False Negatives [0]\n"
        "False Positives [1]\n"
        "  * GDP_CONST: gross domestic product constant prices"
    )


def test_macro_and_micro_differ_as_computed_by_hand() -> None:
    target = sel({"INDICATOR": ["A", "B", "C", "D"], "COUNTRY": ["MEX"]})
    chosen = sel({"INDICATOR": ["A", "B", "C", "X"], "COUNTRY": ["USA"]})
    r = term_selection(chosen, target)
    # INDICATOR: tp 3 fp 1 fn 1 -> P 3/4, R 3/4; COUNTRY: tp 0 fp 1 fn 1 -> P 0, R 0
    assert r.macro_precision == pytest.approx((0.75 + 0) / 2)
    assert r.macro_recall == pytest.approx((0.75 + 0) / 2)
    assert r.micro_precision == pytest.approx(3 / 5)
    assert r.micro_recall == pytest.approx(3 / 5)
    assert (r.tp, r.fp, r.fn) == (3, 2, 2)


def test_match_on_id_ignores_names_but_seed_mode_does_not() -> None:
    target = sel({"COUNTRY": [("MEX", "Mexico")]})
    chosen = sel({"COUNTRY": [("MEX", "United Mexican States")]})
    assert term_selection(chosen, target).macro_recall == 1.0
    seed = term_selection(chosen, target, match_on="id_and_name")
    assert seed.macro_recall == 0.0
    assert seed.macro_precision == 0.0


def test_absent_dimension_penalized_by_default_and_listed() -> None:
    target = sel({"INDICATOR": ["LP"]})
    chosen = sel({"INDICATOR": ["LP"], "FREQ": ["A"]})
    r = term_selection(chosen, target)
    assert r.dimensions_not_in_target == ("FREQ",)
    freq = r.per_dimension["FREQ"]
    assert not freq.in_target and freq.counted
    assert [t.id for t in freq.false_positives] == ["A"]
    assert freq.precision == 0.0
    assert r.macro_precision == pytest.approx(0.5)
    assert r.micro_precision == pytest.approx(0.5)


def test_absent_dimension_ignored_when_asked() -> None:
    target = sel({"INDICATOR": ["LP"]})
    chosen = sel({"INDICATOR": ["LP"], "FREQ": ["A"]})
    r = term_selection(chosen, target, absent_dimension="ignore")
    assert r.dimensions_not_in_target == ("FREQ",)
    assert not r.per_dimension["FREQ"].counted
    assert r.macro_precision == 1.0 and r.macro_recall == 1.0


def test_empty_target_differs_from_absent_target() -> None:
    empty = [
        {
            "dataset_id": DS,
            "dimensions": [
                {"dimension_name": "INDICATOR", "values": [{"id": "LP"}]},
                {"dimension_name": "COUNTRY", "values": []},
            ],
        }
    ]
    nothing_chosen = sel({"INDICATOR": ["LP"]})
    r = term_selection(nothing_chosen, empty)
    # explicit empty target, nothing selected: agreement, counted as perfect
    assert r.per_dimension["COUNTRY"].in_target
    assert r.per_dimension["COUNTRY"].precision == 1.0
    assert r.per_dimension["COUNTRY"].recall == 1.0
    assert r.macro_precision == 1.0
    # explicit empty target, something selected: a false positive, even with "ignore"
    chosen = sel({"INDICATOR": ["LP"], "COUNTRY": ["MEX"]})
    r2 = term_selection(chosen, empty, absent_dimension="ignore")
    assert [t.id for t in r2.per_dimension["COUNTRY"].false_positives] == ["MEX"]
    assert r2.per_dimension["COUNTRY"].precision == 0.0
    assert r2.dimensions_not_in_target == ()


@pytest.mark.parametrize(
    ("policy", "precision", "recall"),
    [("agreement", 0.0, 0.0), ("zero", 0.0, 0.0), ("one", 1.0, 0.0), ("exclude", None, 0.0)],
)
def test_zero_division_policies_when_nothing_selected(
    policy: str, precision: float | None, recall: float
) -> None:
    target = sel({"INDICATOR": ["LP"]})
    chosen = sel({"INDICATOR": []})
    dim = term_selection(chosen, target, zero_division=policy).per_dimension["INDICATOR"]  # type: ignore[arg-type]
    assert dim.precision == precision
    assert dim.recall == recall


def test_zero_division_exclude_leaves_dimension_out_of_macro() -> None:
    target = sel({"INDICATOR": ["LP"], "COUNTRY": ["MEX"]})
    chosen = sel({"INDICATOR": ["LP"], "COUNTRY": []})
    r = term_selection(chosen, target, zero_division="exclude")
    assert r.macro_precision == 1.0  # COUNTRY precision is 0/0 and excluded
    assert r.macro_recall == pytest.approx(0.5)


def test_both_sides_empty_is_perfect_agreement() -> None:
    r = term_selection([], [])
    assert r.macro_precision == 1.0 and r.macro_recall == 1.0
    assert r.per_dimension == {}


def test_wrong_dataset_counts_every_dimension_wrong() -> None:
    target = sel({"INDICATOR": ["LP"]}, ds="IMF.RES:WEO")
    chosen = sel({"INDICATOR": ["LP"]}, ds="IMF.STA:IFS")
    r = term_selection(chosen, target)
    assert set(r.per_dimension) == {"IMF.RES:WEO/INDICATOR", "IMF.STA:IFS/INDICATOR"}
    assert r.macro_recall == 0.0
    assert r.dimensions_not_in_target == ("IMF.STA:IFS/INDICATOR",)


def test_repeated_terms_count_once_and_case_folding_is_optional() -> None:
    target = sel({"COUNTRY": ["MEX"]})
    chosen = sel({"COUNTRY": ["mex", "MEX", "MEX"]})
    r = term_selection(chosen, target)
    assert r.per_dimension["COUNTRY"].precision == pytest.approx(0.5)
    folded = term_selection(chosen, target, ignore_case=True)
    assert folded.per_dimension["COUNTRY"].precision == 1.0


def test_objects_with_attributes_and_dicts_give_the_same_result() -> None:
    from types import SimpleNamespace as NS

    objects = [
        NS(
            dataset_id=d["dataset_id"],
            dimensions=[
                NS(
                    dimension_name=dim["dimension_name"],
                    values=[NS(id=v["id"], name=v.get("name")) for v in dim["values"]],
                )
                for dim in d["dimensions"]
            ],
        )
        for d in SEED_SELECTED
    ]
    assert term_selection(objects, SEED_TARGET) == term_selection(SEED_SELECTED, SEED_TARGET)


def test_bad_policy_is_named() -> None:
    with pytest.raises(ValueError, match="absent_dimension"):
        term_selection([], [], absent_dimension="drop")  # type: ignore[arg-type]


codes = st.lists(st.sampled_from(["A", "B", "C", "D", "E"]), max_size=5)


@given(codes, codes, codes, codes)
def test_invariants(t1: list[str], t2: list[str], s1: list[str], s2: list[str]) -> None:
    target = sel({"INDICATOR": t1, "COUNTRY": t2})
    chosen = sel({"INDICATOR": s1, "COUNTRY": s2})
    r = term_selection(chosen, target)
    for value in (r.macro_precision, r.macro_recall, r.micro_precision, r.micro_recall):
        assert value is not None and 0.0 <= value <= 1.0
    assert r.tp == sum(len(set(a) & set(b)) for a, b in ((t1, s1), (t2, s2)))
    perfect = term_selection(target, target)
    assert perfect.macro_precision == 1.0 and perfect.macro_recall == 1.0
    swapped = term_selection(target, chosen)
    assert swapped.micro_precision == r.micro_recall or (r.tp + r.fn == 0 or r.tp + r.fp == 0)


@given(
    codes,
    codes,
    codes,
    codes,
    st.sampled_from(["id", "id_and_name"]),
    st.sampled_from([DS, "OTHER"]),
)
def test_compare_terms_is_term_selection_with_plain_pairs(
    t1: list[str], t2: list[str], s1: list[str], s2: list[str], match_on: str, ds: str
) -> None:
    from queryeval.metrics.sdmx import TermRef, compare_terms

    target = sel({"INDICATOR": [(c, f"name {c}") for c in t1], "COUNTRY": t2})
    chosen = sel({"INDICATOR": s1, "COUNTRY": [(c, c.lower()) for c in s2]}, ds=ds)
    refs = term_selection(chosen, target, match_on=match_on)  # type: ignore[arg-type]
    pairs = compare_terms(chosen, target, match_on=match_on)  # type: ignore[arg-type]
    assert pairs == refs  # equal as tuples, field by field
    for dim in refs.per_dimension.values():
        assert all(type(t) is TermRef for t in dim.true_positives + dim.false_negatives)
    for dim in pairs.per_dimension.values():
        assert all(type(t) is tuple for t in dim.false_positives + dim.false_negatives)
