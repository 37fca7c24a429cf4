"""Differential check of `weaviate_ast(mode="legacy")` against weaviate-gorilla itself.

Runs the original's own code (its pydantic models, `load_queries` and both versions of
`abstract_syntax_tree_match_score`), imported from a checkout of
https://github.com/weaviate/weaviate-gorilla kept outside this repository, on:

1. its published experimental results (`experimental-results/*.json`: eight models, every
   prediction): queryeval legacy must give each stored `ast_score`, the stored average and
   the stored per-schema figures exactly (float equality);
2. generated inputs covering every class of input the original reads (tool-call arguments
   as its experiment script reads them; queries in its structure as `load_queries` reads
   them; every field with valid, coerced, empty, null, missing, wrongly typed and refused
   values), each prediction against generated golds: the same score, and a refusal exactly
   where the original raised.

Nothing here is part of `make test`. Usage::

    git clone https://github.com/weaviate/weaviate-gorilla /tmp/weaviate-gorilla
    .venv/bin/python scripts/weaviate_legacy_diff.py /tmp/weaviate-gorilla [--random 20000]

The path may be a work tree or a bare git directory (then its HEAD and the 2024-11-20
scorer are extracted into a temporary folder with `git archive` / `git show`). Exit 0 when
everything agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import random
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from queryeval.metrics import weaviate_ast
from queryeval.metrics.weaviate import RefusedByOriginalError, legacy_queries

# The scorer that produced gpt-4o / gpt-4o-mini's published results (search text equal after
# .lower()); the later one (HEAD) awards the search weight on presence.
EXACT_SEARCH_COMMIT = "140a11e"
SCORER_CHANGE = "2024-11-21T10:57"  # commit b993769, "fix AST score": presence from here on


# --- the original, loaded from its checkout -----------------------------------------------


class Original:
    """weaviate-gorilla's models, query loader and scorers, imported from `root`."""

    def __init__(self, root: Path, exact_metrics: Path | None) -> None:
        self.root = root
        sys.path.insert(0, str(root))
        self.models = importlib.import_module("src.models")
        self.load_queries = importlib.import_module("src.utils.load_queries").load_queries
        self.scorers = {"presence": importlib.import_module("src.utils.metrics")}
        if exact_metrics is not None:
            spec = importlib.util.spec_from_file_location("gorilla_metrics_1120", exact_metrics)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.scorers["exact"] = module
        self._tmp = Path(tempfile.mkdtemp(prefix="gorilla-diff-")) / "query.json"
        self.schema = json.dumps(
            {
                "weaviate_collections": [
                    {
                        "name": "Menus",
                        "properties": [
                            {"name": "price", "data_type": ["number"], "description": "d"}
                        ],
                        "envisioned_use_case_overview": "o",
                    }
                ]
            }
        )

    def score(self, search: str, pred: Any, gold: Any) -> float:
        with contextlib.redirect_stdout(io.StringIO()):  # the scorer prints
            return float(self.scorers[search].abstract_syntax_tree_match_score(pred, gold))

    def read_structure(self, query: dict[str, Any]) -> Any:
        """A query in the Gorilla structure, read by the original's `load_queries`."""
        q = {"corresponding_natural_language_query": "q", **query}
        self._tmp.write_text(json.dumps([{"query": q, "database_schema": self.schema}]))
        with contextlib.redirect_stdout(io.StringIO()):
            return self.load_queries(str(self._tmp))[0]

    def read_arguments(self, args: Any) -> Any:
        """Tool-call arguments read as test-main.py (generate_with_models) reads them."""
        m = self.models

        def slot(key: str, model: Any) -> Any:
            return model(**args[key]) if key in args else None

        return m.WeaviateQuery(
            target_collection=args["collection_name"],
            search_query=args.get("search_query"),
            integer_property_filter=slot("integer_property_filter", m.IntPropertyFilter),
            text_property_filter=slot("text_property_filter", m.TextPropertyFilter),
            boolean_property_filter=slot("boolean_property_filter", m.BooleanPropertyFilter),
            integer_property_aggregation=slot("integer_property_aggregation", m.IntAggregation),
            text_property_aggregation=slot("text_property_aggregation", m.TextAggregation),
            boolean_property_aggregation=slot("boolean_property_aggregation", m.BooleanAggregation),
            groupby_property=args.get("groupby_property"),
            corresponding_natural_language_query="q",
        )

    def read_message(self, message: dict[str, Any]) -> Any:
        """An OpenAI message: `json.loads(tool_calls[0].function.arguments)` (test-main)."""
        calls = message["tool_calls"]
        if not calls:
            raise ValueError("No tool called")
        return self.read_arguments(json.loads(calls[0]["function"]["arguments"]))


def checkout(path: Path) -> tuple[Path, Path | None]:
    """(root with src/ and experimental-results/, the 2024-11-20 metrics.py or None)."""
    git_dir = path if (path / "HEAD").is_file() and (path / "objects").is_dir() else path / ".git"
    if not git_dir.exists():
        return path, None
    out = Path(tempfile.mkdtemp(prefix="gorilla-original-"))
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", "HEAD", "src", "experimental-results"],
        # src/ holds the code and the ablations' results (src/test-gorilla/*.json)
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "x", "-C", str(out)], input=archive, check=True)
    exact = out / "metrics_1120.py"
    exact.write_bytes(
        subprocess.run(
            [
                "git",
                "--git-dir",
                str(git_dir),
                "show",
                f"{EXACT_SEARCH_COMMIT}:src/utils/metrics.py",
            ],
            check=True,
            capture_output=True,
        ).stdout
    )
    return out, exact


# --- 1. the published results ---------------------------------------------------------------


def published(root: Path) -> bool:
    main = published_files(sorted((root / "experimental-results").glob("*.json")))
    print("  (ablations of src/test-gorilla, same scorer, gpt-4o:)")
    ablations = published_files(sorted((root / "src" / "test-gorilla").glob("*.json")))
    return main and ablations


def published_files(files: list[Path]) -> bool:
    total = agree = 0
    ok = True
    for path in files:
        data = json.loads(path.read_text())
        search = "exact" if data["timestamp"] < SCORER_CHANGE else "presence"
        scores: list[float] = []
        same = 0
        for r in data["detailed_results"]:
            pred = r["predicted_query"]
            if pred is None:
                value = 0.0  # the experiment's failed prediction
            else:
                value = weaviate_ast(pred, r["ground_truth_query"], mode="legacy", search=search)
                value = value.score
            scores.append(value)
            same += value == r["ast_score"]
        n = len(scores)
        mean_ok = sum(scores) / n == data["average_ast_score"]
        per_schema = _per_schema_published(
            scores, [r["database_schema_index"] for r in data["detailed_results"]]
        )
        schema_ok = per_schema == {int(k): v for k, v in data["per_schema_scores"].items()}
        print(
            f"  {path.name:36s} search={search:8s} {same}/{n} predictions, "
            f"average {'=' if mean_ok else '!='}, per-schema {'=' if schema_ok else '!='}"
        )
        total += n
        agree += same
        ok = ok and same == n and mean_ok and schema_ok
    print(f"published results: {agree}/{total} predictions agree over {len(files)} files")
    return ok


def _per_schema_published(scores: list[float], schema_of: list[int]) -> dict[int, float]:
    """The experiment's figure: at a schema's end, the sum of the last 64 results / 64."""
    out: dict[int, float] = {}
    for i, schema in enumerate(schema_of):
        if i + 1 == len(schema_of) or schema_of[i + 1] != schema:
            out[schema] = sum(scores[max(0, i - 63) : i + 1]) / 64
    return out


# --- 2. generated inputs --------------------------------------------------------------------

MISSING = object()  # the key left out

COLLECTION = ["Menus", "menus", "Menus ", "", None, 5, ["Menus"], MISSING]
SEARCH = [None, "", " ", "pizza", "Pizza", "PIZZA ", "pasta", 5, True, ["pizza"], MISSING]
GROUPBY = [None, "", "isVegetarian", "isvegetarian", {"property_name": "isVegetarian"}, 3, MISSING]
PROPERTY = ["price", "Price", "", 5, None, MISSING]
OPERATORS = {
    "integer": ["=", "<", ">", "<=", ">=", "!=", "==", "lt", "LIKE", "", None, MISSING],
    "text": ["=", "LIKE", "like", "!=", "<", None, MISSING],
    "boolean": ["=", "!=", "==", "<", None, MISSING],
}
VALUES = {
    "integer": [
        20,
        20.0,
        20.5,
        "20",
        " 20 ",
        "20.0",
        "2e1",
        "1_000",
        "abc",
        True,
        False,
        None,
        "",
        [20],
        float("nan"),
        10**30,
        MISSING,
    ],
    "text": ["Rome", "rome", "", " ", 5, 5.5, True, None, ["Rome"], MISSING],
    "boolean": [
        True,
        False,
        "true",
        "True",
        "yes",
        "on",
        "1",
        "0",
        "no",
        "off",
        "f",
        1,
        0,
        2,
        1.0,
        0.5,
        None,
        "maybe",
        " true",
        MISSING,
    ],
}
VALID_METRICS = {
    "integer": ["COUNT", "TYPE", "MIN", "MAX", "MEAN", "MEDIAN", "MODE", "SUM"],
    "text": ["COUNT", "TYPE", "TOP_OCCURRENCES"],
    "boolean": [
        *("COUNT", "TYPE", "TOTAL_TRUE", "TOTAL_FALSE"),
        *("PERCENTAGE_TRUE", "PERCENTAGE_FALSE"),
    ],
}
# the valid metrics of each family, and values the original refuses
METRICS = {
    family: [*valid, *refused]
    for (family, valid), refused in zip(
        VALID_METRICS.items(),
        (
            ["mean", "AVG", "TOP_OCCURRENCES", ["MEAN"], None, "", MISSING],
            ["top_occurrences", "MAX", ["COUNT"], None, MISSING],
            ["total_true", "MEAN", None, MISSING],
        ),
        strict=True,
    )
}
LIMITS = [MISSING, None, 0, -1, 3, 5, "3", " 3", 3.0, 3.5, True, "x", [3]]
SLOT_SHAPES = ["valid", "null", "empty", "string", "list", "missing"]
EXTRA = [MISSING, "x", None]


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is not MISSING:
        d[key] = value


def _filter(rng: random.Random, family: str, wild: bool) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if wild:
        _put(d, "property_name", rng.choice(PROPERTY))
        _put(d, "operator", rng.choice(OPERATORS[family]))
        _put(d, "value", rng.choice(VALUES[family]))
        _put(d, "extra_key", rng.choice(EXTRA))
        return d
    d["property_name"] = rng.choice(["price", "Price"])
    valid_ops = {"integer": ["=", "<", ">=", ">"], "text": ["=", "LIKE"], "boolean": ["=", "!="]}
    d["operator"] = rng.choice(valid_ops[family])
    d["value"] = {
        "integer": rng.choice([20, 20.0, 21, 20.5]),
        "text": rng.choice(["Rome", "rome", "Par*"]),
        "boolean": rng.choice([True, False]),
    }[family]
    return d


def _aggregation(rng: random.Random, family: str, wild: bool) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if wild:
        _put(d, "property_name", rng.choice(PROPERTY))
        _put(d, "metrics", rng.choice(METRICS[family]))
        _put(d, "top_occurrences_limit", rng.choice(LIMITS))
        _put(d, "extra_key", rng.choice(EXTRA))
        return d
    d["property_name"] = rng.choice(["price", "Price"])
    d["metrics"] = rng.choice(VALID_METRICS[family])
    if family == "text":
        _put(d, "top_occurrences_limit", rng.choice([MISSING, None, 3, 5]))
    return d


def _slot(rng: random.Random, kind: str, family: str, gold: bool) -> Any:
    shape = rng.choice(["missing", "null", "valid", "valid"] if gold else SLOT_SHAPES)
    if gold and rng.random() < 0.05:
        shape = rng.choice(["empty", "falsy"])
    if shape == "missing":
        return MISSING
    if shape == "null":
        return None
    if shape == "empty":
        return {}
    if shape == "falsy":
        return rng.choice(["", 0, [], False])
    if shape == "string":
        return json.dumps(_filter(rng, family, False))
    if shape == "list":
        return (
            [_filter(rng, family, False)]
            if kind == "filter"
            else [_aggregation(rng, family, False)]
        )
    wild = rng.random() < (0.02 if gold else 0.5)  # a few golds the original refuses
    return _filter(rng, family, wild) if kind == "filter" else _aggregation(rng, family, wild)


FAMILIES = ("integer", "text", "boolean")


def gold_query(rng: random.Random) -> dict[str, Any]:
    q: dict[str, Any] = {"target_collection": rng.choice(["Menus", "Restaurants"])}
    _put(q, "search_query", rng.choice([None, "pizza", "Pizza", "", MISSING]))
    for family in FAMILIES:
        _put(q, f"{family}_property_filter", _slot(rng, "filter", family, True))
        _put(q, f"{family}_property_aggregation", _slot(rng, "aggregation", family, True))
    _put(q, "groupby_property", rng.choice([None, "isVegetarian", "", MISSING]))
    return q


def predicted_arguments(rng: random.Random, gold: dict[str, Any]) -> dict[str, Any]:
    """Tool-call arguments: the gold's parts, then 0-3 fields changed to any value of their
    class (so that most predictions are read and scored, and every class is met)."""
    args: dict[str, Any] = {"collection_name": gold["target_collection"]}
    for key, value in gold.items():
        keep = value or (value is None and rng.random() < 0.1)  # explicit nulls are refused
        if key != "target_collection" and keep and rng.random() < 0.9:
            args[key] = json.loads(json.dumps(value))
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
        _mutate(rng, args)
    return args


def _mutate(rng: random.Random, args: dict[str, Any]) -> None:
    family = rng.choice(FAMILIES)
    what = rng.choice(
        ["collection", "search", "groupby", "filter", "aggregation", "extra"] * 2
        + ["filter field", "aggregation field"] * 3
    )
    if what == "collection":
        _set(args, "collection_name", rng.choice(COLLECTION))
    elif what == "search":
        _set(args, "search_query", rng.choice(SEARCH))
    elif what == "groupby":
        _set(args, "groupby_property", rng.choice(GROUPBY))
    elif what == "extra":
        args[rng.choice(["limit", "tool_rationale", "return_properties"])] = rng.choice(
            [5, "x", None]
        )
    elif what in ("filter", "aggregation"):
        _set(args, f"{family}_property_{what}", _slot(rng, what, family, False))
    else:
        kind = what.split()[0]
        key = f"{family}_property_{kind}"
        slot = args.get(key)
        if not isinstance(slot, dict) or not slot:
            slot = (
                _filter(rng, family, False)
                if kind == "filter"
                else _aggregation(rng, family, False)
            )
        fields = {
            "property_name": PROPERTY,
            "extra_key": EXTRA,
            **(
                {"operator": OPERATORS[family], "value": VALUES[family]}
                if kind == "filter"
                else {"metrics": METRICS[family], "top_occurrences_limit": LIMITS}
            ),
        }
        field = rng.choice(list(fields))
        _set(slot, field, rng.choice(fields[field]))
        args[key] = slot


def _set(d: dict[str, Any], key: str, value: Any) -> None:
    if value is MISSING:
        d.pop(key, None)
    else:
        d[key] = value


def wrap(rng: random.Random, args: dict[str, Any]) -> tuple[str, Any, Callable[[Original], Any]]:
    """The prediction as queryeval receives it, and how the original reads it."""
    how = rng.choice(["arguments", "arguments", "message", "structure"])
    if how == "message":
        calls = [
            {
                "type": "function",
                "function": {"name": "query_database", "arguments": json.dumps(args)},
            }
        ]
        if rng.random() < 0.3:  # a second call: the original reads the first only
            calls.append(
                {"type": "function", "function": {"name": "query_database", "arguments": "{}"}}
            )
        message = {"role": "assistant", "tool_calls": calls}
        return how, message, lambda o: o.read_message(message)
    if how == "structure" and "collection_name" in args:
        q = {("target_collection" if k == "collection_name" else k): v for k, v in args.items()}
        return how, q, lambda o: o.read_structure(q)
    return "arguments", args, lambda o: o.read_arguments(args)


def classes(args: dict[str, Any]) -> Iterator[str]:
    """The input classes a prediction exercises (for the per-class table)."""
    for key, value in args.items():
        name = key.replace("_property_", " ")
        if isinstance(value, dict) and "_property_" in key:
            family = key.split("_property_")[0]
            for field, v in value.items():
                yield f"{name}.{field}={_label(v, family if field == 'value' else '')}"
            needed = ("operator", "value") if "filter" in key else ("metrics",)
            for field in ("property_name", *needed):
                if field not in value:
                    yield f"{name}.{field} missing"
        else:
            yield f"{name}={_label(value)}"
    for key in ("collection_name", "search_query", "groupby_property"):
        if key not in args:
            yield f"{key} missing"


def _label(v: Any, family: str = "") -> str:
    if isinstance(v, str):
        return "''" if v == "" else ("str" if len(v) > 12 else repr(v))
    if isinstance(v, dict):
        return "object" if v else "{}"
    if isinstance(v, float) and v != v:
        return "nan"
    return type(v).__name__ if isinstance(v, list | dict) else repr(v)


def generated(original: Original, n: int, seed: int) -> bool:
    rng = random.Random(seed)
    per_class: dict[str, Counter[str]] = defaultdict(Counter)
    outcomes: Counter[str] = Counter()
    mismatches: list[str] = []
    golds_refused = 0
    searches = list(original.scorers)
    for _ in range(n):
        gold = gold_query(rng)
        try:
            gold_original = original.read_structure(gold)
        except Exception:
            # not the original's input: legacy reads it as queryeval does, or refuses it too
            golds_refused += 1
            try:
                legacy_queries(gold, prediction=False)
                outcomes["gold refused by the original, read by queryeval"] += 1
            except RefusedByOriginalError:
                outcomes["gold refused by both"] += 1
            continue
        args = predicted_arguments(rng, gold)
        how, prediction, read = wrap(rng, args)
        search = rng.choice(searches)
        try:
            expected: float | None = original.score(search, read(original), gold_original)
        except Exception:
            expected = None  # refused: the experiment scored it 0
        try:
            got: float | None = weaviate_ast(prediction, gold, mode="legacy", search=search).score
        except RefusedByOriginalError:
            got = None
        same = got == expected
        outcomes[
            f"{how}: {'refused' if expected is None else 'scored'} {'agree' if same else 'DIFFER'}"
        ] += 1
        for label in set(classes(args)):
            per_class[label]["agree" if same else "differ"] += 1
            per_class[label]["scored"] += expected is not None
        if not same and len(mismatches) < 20:
            mismatches.append(
                f"{how} search={search}: original {expected}, queryeval {got}\n"
                f"    pred {prediction!r}\n    gold {gold!r}"
            )
    print(f"generated: {n} pairs ({golds_refused} golds the original refuses)")
    for key, count in sorted(outcomes.items()):
        print(f"  {key:40s} {count}")
    print(f"  {len(per_class)} input classes (field=value as sent); each one's agreement:")
    worst = sorted(per_class.items(), key=lambda kv: (kv[1]["differ"] == 0, kv[0]))
    for label, c in worst:
        total = c["agree"] + c["differ"]
        print(f"    {label:52s} {c['agree']}/{total} agree ({c['scored']} scored)")
    for m in mismatches:
        print("MISMATCH", m)
    return not mismatches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("original", type=Path, help="weaviate-gorilla checkout or git dir")
    parser.add_argument("--random", type=int, default=20_000, help="generated pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--exact-metrics", type=Path, help="the 2024-11-20 metrics.py")
    a = parser.parse_args()
    root, exact = checkout(a.original)
    original = Original(root, a.exact_metrics or exact)
    ok = published(root)
    ok = generated(original, a.random, a.seed) and ok
    print("AGREE" if ok else "DIFFERENCES FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
