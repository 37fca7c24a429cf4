"""`queryeval audit` on Cypher golds (the example movie graph on the session's ArcadeDB,
reordered copies and variants in the session's scratch ArcadeDB): a LIMIT without ORDER BY
is `nondeterministic`, a name the graph never holds is an `unknown_literal` with its near
match; clean golds (an ORDER BY ... LIMIT over unique keys, a literal that occurs) are not
flagged; every finding re-checks from its evidence with the graph's engine."""

from __future__ import annotations

import json
from typing import Any

import pytest

from graph_support import MOVIES_SUITE, share_engine
from queryeval.audit import audit_suite
from queryeval.cases import load_cases
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext

CASES = {
    "cy-ok-literal": "MATCH (p:Person) WHERE p.name = 'Tom Hanks' RETURN p.born AS born",
    "cy-ok-ordered": "MATCH (m:Movie) RETURN m.title AS t ORDER BY t LIMIT 3",
    "cy-limit": "MATCH (m:Movie) RETURN m.title AS t LIMIT 3",
    "cy-typo": "MATCH (p:Person) WHERE p.name IN ['Tom Hank', 'Meg Ryan'] RETURN p.born AS b",
    "cy-genre": "MATCH (m:Movie)-[:IN_GENRE]->(:Genre {name: 'Sci Fi'}) RETURN count(m) + 100 AS n",
}
PLANTED = {("cy-limit", "nondeterministic"), ("cy-typo", "unknown_literal"),
           ("cy-genre", "unknown_literal")}  # fmt: skip


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, movies_engine: Any, graph_scratch: Any) -> Any:
    folder = tmp_path_factory.mktemp("audit_cypher")
    fixture = (MOVIES_SUITE.parent / "fixtures" / "movies.yaml").resolve()
    target = {"language": "cypher", "database": "movies"}
    cases = [{"id": i, "conversation": [{"content": i, "target": {"query": {**target,
              "text": q}}}]} for i, q in CASES.items()]  # fmt: skip
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "suite.yaml").write_text(
        "name: audit-cypher\ncases: cases.jsonl\ndatabases:\n"
        f"  movies: {{engine: arcadedb, fixture: '{fixture}', options: {{timeout_s: 2.0}}}}\n"
        "systems:\n  - {name: s, predictions: p.jsonl}\nscorers: [execution_match]\n"
    )
    (folder / "p.jsonl").write_text('{"case_id": "cy-limit", "query": "RETURN 1"}\n')
    suite = load_suite(folder / "suite.yaml")
    ctx = ScoringContext(suite, cache_dir=folder / "cache")
    share_engine(ctx, "movies", movies_engine)
    try:
        return audit_suite(suite, load_cases(suite.cases, suite.base_dir), ctx, variants=6)
    finally:
        ctx.close()


def test_planted_cypher_defects_are_found_and_clean_golds_not_flagged(report: Any) -> None:
    found = {(f.case_id, f.kind) for f in report.findings}
    assert found == PLANTED, [f.message for f in report.findings]
    typo = next(f for f in report.findings if f.case_id == "cy-typo")
    assert typo.evidence["near_matches"][0]["value"] == "Tom Hanks"
    genre = next(f for f in report.findings if f.case_id == "cy-genre")
    assert genre.evidence["table"] == "Genre" and "Sci-Fi" in [
        m["value"] for m in genre.evidence["near_matches"]
    ]


def test_cypher_findings_recheck_with_the_graph_engine(report: Any, movies_engine: Any) -> None:
    for f in report.findings:
        ev = f.evidence
        if f.kind == "unknown_literal":
            assert movies_engine.execute(ev["check"]).result.rows == ()
            near = ev["near_matches"][0]["value"]
            assert movies_engine.execute(ev["check"].replace(ev["literal"], near)).result.rows
        else:
            assert ev["patterns"] == ["limit without order by"]
            original = movies_engine.execute(ev["query"]).result.rows
            assert [list(r) for r in original] == ev["result"]["rows"]
            assert ev["permuted"]["result"]["rows"] != ev["permuted"]["copy_result"]["rows"]
            assert ev["permuted"]["order"] in ("reversed", "shuffled")
