"""Generic rendering of scorer aggregates, grid configuration names, SVG charts."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from queryeval.reports._components import component_families
from queryeval.reports._excel_sheets import parse_configuration
from queryeval.reports._svg import Series, grouped_hbars, histogram


def _summary(aggregate_a: dict, aggregate_b: dict) -> dict:
    return {
        "systems": {
            "a": {"scorers": {"ast": {"aggregate": aggregate_a}}},
            "b": {"scorers": {"ast": {"aggregate": aggregate_b}}},
        }
    }


def test_families_tables_and_scalars_merge_across_systems() -> None:
    summary = _summary(
        {
            "families": {"collection": {"mean": 0.9, "n": 10}, "filters": {"mean": 0.5, "n": 8}},
            "error_types": {"syntax": 3, "schema": 1},
            "overall": {"score": 0.7, "cases": 10},
        },
        {
            "families": {"collection": {"mean": 1.0, "n": 10}, "groupby": {"mean": 0.2, "n": 2}},
            "error_types": {"syntax": 1},
            "overall": {"score": 0.8, "cases": 10},
        },
    )
    fams = {f.path: f for f in component_families(summary)}
    assert set(fams) == {"families", "error_types", "overall"}
    families = fams["families"]
    assert families.kind == "table" and families.items == ["collection", "filters", "groupby"]
    assert families.columns == ["mean", "n"]
    assert families.main_column() == ("mean", True)
    assert families.data["b"]["groupby"] == {"mean": 0.2, "n": 2}
    errors = fams["error_types"]
    assert errors.kind == "scalars" and errors.rate_items() == []
    assert errors.data["a"] == {"syntax": {"value": 3}, "schema": {"value": 1}}
    overall = fams["overall"]
    assert overall.rate_items() == ["score"]  # cases (a count) is not a rate


def test_main_column_prefers_recall_over_mean() -> None:
    summary = _summary(
        {"per_dimension": {"COUNTRY": {"cases": 3, "mean_precision": 0.5, "mean_recall": 0.7}}},
        {},
    )
    (fam,) = component_families(summary)
    assert fam.main_column() == ("mean_recall", True)


def test_parse_configuration() -> None:
    assert parse_configuration("rag[top_k=3,model=gpt-x,temp=0.5,cot=true]") == (
        "rag",
        {"top_k": 3, "model": "gpt-x", "temp": 0.5, "cot": True},
    )
    assert parse_configuration("rag[tools=[1, 2],k=1]") == ("rag", {"tools": "[1, 2]", "k": 1})
    assert parse_configuration("plain") is None


def test_svg_charts_are_well_formed_and_escape_labels() -> None:
    svg = grouped_hbars(
        ["<b>cat</b>", "x"],
        [Series("s&1", [0.5, None], "#000", [0.4, None], [0.6, None])],
        label="t",
    )
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag.endswith("svg")
    assert "<b>" not in svg and "&lt;b&gt;cat&lt;/b&gt;" in svg
    assert "95% CI 0.40 to 0.60" in svg and "n/a" in svg
    counts = grouped_hbars(["syntax"], [Series("a", [3], "#000")], domain=None, fmt="{:g}".format)
    ET.fromstring(counts)
    assert ">4<" in counts  # whole-number axis for counts
    hist = histogram([0, 0.5, 1], [Series("a", [2, 5], "#000")])
    ET.fromstring(hist)
    assert "a: 5 in [0.5, 1]" in hist
