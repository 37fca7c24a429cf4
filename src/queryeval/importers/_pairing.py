"""A model's file of answers paired with the imported cases: by case id when its records
name one, else by (question, database), as the benchmarks' own files are written (NL2KQL's
and neo4j-labs/text2cypher's CSVs carry no ids: a second model's file for the same questions
is paired by its question and database)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._records import read_predictions, read_rows, text_field
from queryeval.importers._suite import ImportedSuite, ImportRequest

ID_KEYS = ("case_id", "id", "instance_id")


@dataclass(frozen=True)
class Keyed:
    """What pairs a case with a row of a model's file: its question, its database (None
    when the benchmark names none) and further columns that break ties (`type`)."""

    case_id: str
    question: str
    database: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Pairing:
    """How rows of a model's file are read: the question, query and database columns, the
    columns that break ties between cases asking the same question, and how a database
    name is normalised (e.g. an alias `neo4jlabs_demo_db_movies` -> `movies`)."""

    question_fields: Sequence[str]
    query_fields: Sequence[str]
    database_fields: Sequence[str] = ()
    tie_fields: Sequence[str] = ()
    database_name: Callable[[str], str] = str


def question_key(text: str) -> str:
    """A question as compared: whitespace runs as one space, ends stripped.

    >>> question_key("  How many\\n movies? ")
    'How many movies?'
    """
    return " ".join(text.split())


def add_paired_predictions(
    suite: ImportedSuite,
    request: ImportRequest,
    keyed: Sequence[Keyed],
    pairing: Pairing,
    language: str,
) -> None:
    """The request's `(system, file)` predictions as systems of `suite` (replacing the `gold`
    stand-in): a file whose records name a case (`case_id`, `id`, `instance_id`) is read by
    id, any other by (question, database); a note says how many cases each file answers."""
    ids = {c["id"] for c in suite.cases}
    for system, path in request.predictions:
        if _names_cases(path):
            fields = (*pairing.query_fields, "query")
            suite.predictions[system] = read_predictions(path, ids, fields, language)
            continue
        paired = pair_by_question(path, keyed, pairing, language)
        suite.predictions[system] = paired.records
        suite.notes.append(
            f"{system}: {len(paired.records)} of {len(suite.cases)} case(s) paired with "
            f"{path.name} by question and database; a case without a row counts as missing "
            "(failed)"
        )
        if paired.repeated:
            suite.notes.append(
                f"{system}: {len(paired.repeated)} row(s) ask a question again after every "
                f"case asking it was paired (first at line {paired.repeated[0]}): the first "
                "answers kept"
            )
        if paired.unmatched:
            suite.notes.append(
                f"{system}: {len(paired.unmatched)} row(s) ask a question no case asks (first "
                f"at line {paired.unmatched[0]}): left out"
            )
    if request.predictions:
        suite.predictions.pop("gold", None)


def _names_cases(path: Path) -> bool:
    for _, rec in read_rows(path):
        return isinstance(rec, Mapping) and any(rec.get(k) not in (None, "") for k in ID_KEYS)
    raise InputError("no records in the predictions file", path=path)


@dataclass
class Paired:
    """The prediction records of a file paired by question, and the lines of its rows left
    out: asking a question again once every case asking it is paired, or no case's."""

    records: list[dict[str, Any]] = field(default_factory=list)
    repeated: list[int] = field(default_factory=list)
    unmatched: list[int] = field(default_factory=list)


def pair_by_question(path: Path, keyed: Sequence[Keyed], pairing: Pairing, language: str) -> Paired:
    """One prediction record per row of `path`, each paired with the first case not yet
    paired that asks the same question on the same database (a row that names no database
    pairs on the question alone; among cases asking the same question, one with the same
    tie columns first, else in file order: the n-th such row answers the n-th such case).
    Rows left out are counted (a model's file may hold more questions than the cases); a
    file none of whose rows pairs is an InputError naming its first row."""
    by_question: dict[str, list[Keyed]] = {}
    for k in keyed:
        by_question.setdefault(question_key(k.question), []).append(k)
    used: set[str] = set()
    out = Paired()
    first_error: InputError | None = None
    for line, rec in read_rows(path):
        if not isinstance(rec, Mapping):
            raise InputError("expected an object", path=path, line=line)
        question = text_field(rec, pairing.question_fields, path, line)
        if question is None:
            raise InputError(
                "the row names no case (case_id, id, instance_id) and has no question "
                f"({', '.join(pairing.question_fields)}) to pair it by",
                path=path,
                line=line,
            )
        raw_db = text_field(rec, pairing.database_fields, path, line)
        database = pairing.database_name(raw_db) if raw_db is not None else None
        asking = by_question.get(question_key(question), [])
        same_db = [
            k
            for k in asking
            if database is None
            or k.database is None
            or pairing.database_name(k.database) == database
        ]
        free = [k for k in same_db if k.case_id not in used]
        if not free:
            where = f" on database {raw_db!r}" if raw_db is not None else ""
            if same_db:
                out.repeated.append(line)
                continue
            out.unmatched.append(line)
            if first_error is None:
                why = f"no case asks this question{where}: {question_key(question)[:80]!r}"
                first_error = InputError(why, path=path, line=line)
            continue
        ties = {f: str(rec[f]) for f in pairing.tie_fields if rec.get(f) not in (None, "")}
        tied = [k for k in free if ties and all(k.extra.get(f) == v for f, v in ties.items())]
        best = tied[0] if tied else free[0]
        used.add(best.case_id)
        query = text_field(rec, pairing.query_fields, path, line)
        if query is None:
            out.records.append({"case_id": best.case_id, "error": "no prediction"})
        else:
            out.records.append({"case_id": best.case_id, "query": query, "language": language})
    if not out.records and first_error is not None:
        raise first_error
    return out
