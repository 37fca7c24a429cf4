"""Spider, SParC and CoSQL (and the test-suite databases of ``test-suite-sql-eval``).

Sources, in any order (folders are searched for the usual names):

- the examples: Spider's ``dev.json`` (``[{db_id, question, query}]``), or SParC/CoSQL
  interactions (``[{database_id, interaction: [{utterance, query}]}]``); ``--set
  split=test`` looks for ``test.json`` instead;
- ``tables.json`` (optional: foreign keys for the exact-set-match scorer);
- the databases: a folder of ``<db>/<db>.sqlite`` (Spider's ``database/``, or the
  test-suite's, whose extra ``<db>/*.sqlite`` files become database variants: a prediction
  passes only if it matches on every one, as ``--set test_suite=false`` turns off);
- a gold file (``SQL<TAB>db_id`` per line, a blank line between interactions): when given
  with the examples it must agree in length and it is what is scored (as the official
  script does); given alone, cases have no question.

Predictions (``--predictions FILE``): one SQL per line, in the examples' order (the text
before a first TAB, stripped, as the official script reads it); for interactions a blank
line ends each interaction. Options: see `OPTIONS`. With ``--skip-missing`` the questions
whose database is absent are left out (and reported) instead of stopping the import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._read import (
    database_root,
    expect_list_of_objects,
    read_json,
    read_lines,
    sqlite_files,
)
from queryeval.importers._suite import ImportedSuite, ImportRequest

SUMMARY = "Spider / SParC / CoSQL: dev.json or interactions, tables.json, database/, gold SQL"

PRESETS = ("spider", "spider_legacy")
OPTIONS = {
    "preset": "spider (queryeval's conventions, the default) or spider_legacy (the official "
    "scripts' verdicts: the leaderboards' figures)",
    "split": "dev (the default) or test: which examples file to look for",
    "test_suite": "true (the default): the test-suite databases found become variants",
    "timeout_s": "time limit of each query, seconds (60)",
}
SCORERS = ("executes", "execution_match", "results_f1", "spider_exact_match")
SKIPS_MISSING = True


@dataclass
class Example:
    """One question to score: its database, gold SQL and place in an interaction."""

    db: str
    query: str
    question: str
    interaction: int
    turn: int  # 1-based
    history: list[tuple[str, str]] = field(default_factory=list)  # (utterance, gold) before


@dataclass
class Sources:
    """The files found among the sources."""

    examples: Path | None = None
    tables: Path | None = None
    databases: Path | None = None
    gold: Path | None = None


def build(request: ImportRequest, benchmark: str = "spider") -> ImportedSuite:
    """The suite of a Spider-family benchmark (see the module docstring); ``benchmark``
    names the suite (``sparc``, ``cosql``) when ``--name`` does not."""
    request.expect_options(*OPTIONS)
    split = request.option("split", "dev") or "dev"
    preset = request.option("preset", "spider") or "spider"
    if preset not in PRESETS:
        raise InputError(f"--set preset={preset}: expected one of {', '.join(PRESETS)}")
    found = find_sources(request.sources, split)
    if found.databases is None:
        raise InputError("no database folder (<db>/<db>.sqlite) among the sources")
    examples = _examples(found)
    names = sorted({e.db for e in examples})
    missing = [n for n in names if not _database_file(found.databases, n)]
    if missing and not request.skip_missing:
        name = missing[0]
        raise InputError(
            f"database {name!r} not found: expected {found.databases / name / name}.sqlite "
            f"({len(missing)} database(s) absent; --skip-missing leaves their questions out)",
            path=found.databases,
        )
    databases, variants = spider_databases(
        found.databases,
        [n for n in names if n not in missing],
        test_suite=_flag(request.option("test_suite", "true"), "test_suite"),
        timeout_s=request.number_option("timeout_s", 60.0),
    )
    hardness = _hardness(examples, databases)
    interactive = any(e.turn > 1 for e in examples)
    cases = [
        _case(i, e, variants.get(e.db, []), hardness[i], interactive)
        for i, e in enumerate(examples)
    ]
    predictions = {name: _predictions(path, examples, cases) for name, path in request.predictions}
    exact_options: dict[str, Any] = {"tables": str(found.tables.resolve())} if found.tables else {}
    if preset == "spider_legacy":
        exact_options["legacy"] = True  # the official reader: the leaderboards' EM
    scorers_extra: list[dict[str, Any]] = [
        {"name": "spider_exact_match", "weight": 0, "options": exact_options},
    ]
    suite = ImportedSuite(
        name=request.name or f"{benchmark}-{split}",
        cases=cases,
        databases=databases,
        predictions=predictions,
        preset=preset,
        leaderboard="spider_legacy",
    )
    suite.suite["scorers"] = _preset_scorers(preset) + scorers_extra
    absent: dict[str, list[str]] = {}
    for e, case in zip(examples, cases, strict=True):
        if e.db in missing:
            absent.setdefault(e.db, []).append(case["id"])
    suite.leave_out(absent)
    if any(variants.values()):
        suite.notes.append(
            f"test-suite accuracy: {sum(len(v) for v in variants.values())} database "
            "variants; a prediction passes only if it matches on every one"
        )
    if found.tables is None:
        suite.notes.append("no tables.json: exact-set-match without foreign-key folding")
    return suite


def _preset_scorers(preset: str) -> list[dict[str, Any]]:
    """A copy of the preset's scorers (options set at import must not change the preset)."""
    import copy

    from queryeval.config import PRESETS as ALL_PRESETS

    return copy.deepcopy(list(ALL_PRESETS[preset]["scorers"]))


def _flag(value: str | None, key: str) -> bool:
    text = (value or "").strip().lower()
    if text in {"true", "yes", "1", "on"}:
        return True
    if text in {"false", "no", "0", "off"}:
        return False
    raise InputError(f"--set {key}={value}: expected true or false")


def find_sources(sources: list[Path] | tuple[Path, ...] | Any, split: str) -> Sources:
    """Classify the given files and folders (a later one of a kind wins)."""
    found = Sources()
    names = {
        "examples": (f"{split}.json", f"cosql_{split}.json", f"sparc_{split}.json"),
        "tables": (f"{split}_tables.json", "tables.json"),
        "gold": (f"{split}_gold.sql", f"{split}_gold.txt", "gold.txt"),
    }
    for source in sources:
        if source.is_dir():
            if database_root(source):
                found.databases = source
            subs = [f"{split}_database", "database", "databases"]  # test: test_database
            if split != "test":
                subs.remove(f"{split}_database")
                subs.append(f"{split}_database")
            for sub in subs:
                if database_root(source / sub):
                    found.databases = source / sub
                    break
            for kind, candidates in names.items():
                if getattr(found, kind) is not None:
                    continue
                for candidate in candidates:
                    for folder in (source, source / "sql_state_tracking"):
                        if (folder / candidate).is_file():
                            setattr(found, kind, folder / candidate)
                            break
                    if getattr(found, kind) is not None:
                        break
        elif source.suffix.lower() == ".json":
            data = read_json(source)
            first = data[0] if isinstance(data, list) and data else {}
            if isinstance(first, dict) and "column_names_original" in first:
                found.tables = source
            else:
                found.examples = source
        else:
            found.gold = source
    if found.examples is None and found.gold is None:
        raise InputError(
            f"no examples ({split}.json or interactions) or gold file among the sources"
        )
    return found


def _examples(found: Sources) -> list[Example]:
    examples = _read_examples(found.examples) if found.examples is not None else None
    gold = read_gold(found.gold) if found.gold is not None else None
    if examples is None:
        assert gold is not None
        return gold
    if gold is None:
        return examples
    interactive = any(e.turn > 1 for e in examples)
    shape = [(e.interaction, e.turn) for e in gold] if interactive else [1] * len(gold)
    expected = [(e.interaction, e.turn) for e in examples] if interactive else [1] * len(examples)
    if shape != expected:
        raise InputError(
            f"{len(gold)} gold queries in {_count(gold)} interaction(s), but the examples "
            f"({found.examples}) have {len(examples)} in {_count(examples)}",
            path=found.gold,
        )
    for i, (g, e) in enumerate(zip(gold, examples, strict=True)):
        if g.db != e.db:
            raise InputError(
                f"gold query {i + 1} is on {g.db!r}, but example {i} on {e.db!r}",
                path=found.gold,
            )
        g.question, g.history = e.question, e.history
        g.interaction, g.turn = e.interaction, e.turn
    return gold


def _count(examples: list[Example]) -> int:
    return len({e.interaction for e in examples})


def _read_examples(path: Path) -> list[Example]:
    data = expect_list_of_objects(read_json(path), path, "examples")
    examples: list[Example] = []
    for i, item in enumerate(data):
        where = f"item {i}"
        if "interaction" in item:
            db = _text(item, ("database_id", "db_id"), path, where)
            turns = item["interaction"]
            if not isinstance(turns, list) or not turns:
                raise InputError("'interaction': expected a non-empty list", path=path, where=where)
            history: list[tuple[str, str]] = []
            for t, turn in enumerate(turns):
                here = f"{where}: interaction turn {t}"
                if not isinstance(turn, dict):
                    raise InputError("expected an object", path=path, where=here)
                utterance = _text(turn, ("utterance",), path, here)
                query = _text(turn, ("query",), path, here)
                examples.append(Example(db, query, utterance, i, t + 1, list(history)))
                history.append((utterance, query))
        else:
            db = _text(item, ("db_id", "database_id"), path, where)
            query = _text(item, ("query", "SQL", "sql"), path, where)
            question = _text(item, ("question",), path, where)
            examples.append(Example(db, query, question, i, 1))
    return examples


def _text(item: dict[str, Any], keys: tuple[str, ...], path: Path, where: str) -> str:
    for key in keys:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value
    raise InputError(f"expected a non-empty string '{keys[0]}'", path=path, where=where)


def read_gold(path: Path) -> list[Example]:
    """``SQL<TAB>db_id`` lines; a blank line ends an interaction (as the official script
    reads it: each line stripped, split at TABs)."""
    examples: list[Example] = []
    interaction, turn = 0, 0
    for lineno, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            if turn:
                interaction, turn = interaction + 1, 0
            continue
        parts = line.strip().split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise InputError("expected 'SQL<TAB>db_id'", path=path, line=lineno)
        turn += 1
        examples.append(Example(parts[1].strip(), parts[0], "", interaction, turn))
    if not examples:
        raise InputError("no gold queries", path=path)
    return examples


def spider_databases(
    root: Path, names: list[str], *, test_suite: bool, timeout_s: float
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Suite database entries for ``names`` under ``root`` and each one's variants."""
    # text that is not UTF-8 is decoded dropping the bad bytes, as the official script does
    options = {"timeout_s": timeout_s, "max_rows": 1_000_000, "text_errors": "ignore"}
    databases: dict[str, dict[str, Any]] = {}
    variants: dict[str, list[str]] = {}
    for name in names:
        folder = root / name
        files = sqlite_files(folder) if folder.is_dir() else []
        if not files or files[0] != folder / f"{name}.sqlite":
            raise InputError(
                f"database {name!r} not found: expected {folder / name}.sqlite", path=root
            )
        databases[name] = {
            "engine": "sqlite",
            "path": str(files[0].resolve()),
            "options": dict(options),
        }
        variants[name] = []
        if test_suite:
            for extra in files[1:]:
                key = f"{name}@{extra.name}"
                databases[key] = {
                    "engine": "sqlite",
                    "path": str(extra.resolve()),
                    "options": dict(options),
                }
                variants[name].append(key)
    return databases, variants


def _database_file(root: Path, name: str) -> bool:
    folder = root / name
    files = sqlite_files(folder) if folder.is_dir() else []
    return bool(files) and files[0] == folder / f"{name}.sqlite"


def _hardness(examples: list[Example], databases: dict[str, dict[str, Any]]) -> list[str]:
    """Spider's hardness bucket of each gold (``unknown`` where Spider's parser would fail,
    or its database is absent)."""
    from queryeval.metrics.benchmarks import SpiderParseError, spider_hardness, sqlite_schema

    schemas: dict[str, Any] = {}
    buckets = []
    for e in examples:
        if e.db not in databases:
            buckets.append("unknown")
            continue
        if e.db not in schemas:
            schemas[e.db] = sqlite_schema(Path(databases[e.db]["path"]))
        try:
            buckets.append(spider_hardness(e.query, schemas[e.db]))
        except SpiderParseError:
            buckets.append("unknown")
    return buckets


def _case(
    index: int, e: Example, variants: list[str], hardness: str, interactive: bool
) -> dict[str, Any]:
    conversation: list[dict[str, Any]] = []
    for utterance, query in e.history:
        conversation.append(
            {
                "role": "user",
                "content": utterance,
                "target": {"query": {"text": query, "database": e.db}},
            }
        )
    conversation.append(
        {
            "role": "user",
            "content": e.question,
            "target": {"query": {"text": e.query, "database": e.db}},
        }
    )
    tags = [f"hardness:{hardness}", f"db:{e.db}"]
    metadata: dict[str, Any] = {"database": e.db, "index": index}
    if interactive:
        tags.append(f"turn:{e.turn if e.turn <= 4 else '>4'}")
        metadata["interaction"] = e.interaction
        metadata["turn"] = e.turn
    if variants:
        metadata["variants"] = variants
    return {
        "id": f"i{e.interaction:04d}-t{e.turn}" if interactive else f"{index:04d}",
        "tags": tags,
        "metadata": metadata,
        "conversation": conversation,
    }


def _predictions(
    path: Path, examples: list[Example], cases: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One prediction per example, in order; a blank line ends an interaction."""
    interactive = any(e.turn > 1 for e in examples)
    lines = read_lines(path)
    sessions: list[list[tuple[int, str]]] = [[]]
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            if not interactive:
                raise InputError(
                    "blank line: Spider predictions are one SQL per line", path=path, line=lineno
                )
            if sessions[-1]:
                sessions.append([])
            continue
        sessions[-1].append((lineno, line.strip().split("\t")[0]))
    if not sessions[-1]:
        sessions.pop()
    if not interactive:
        sessions = [[p for s in sessions for p in s]]
        expected_groups = [list(range(len(examples)))]
    else:
        groups: dict[int, list[int]] = {}
        for i, e in enumerate(examples):
            groups.setdefault(e.interaction, []).append(i)
        expected_groups = list(groups.values())
    if len(sessions) != len(expected_groups):
        raise InputError(
            f"{len(sessions)} interaction(s) of predictions, expected {len(expected_groups)}",
            path=path,
        )
    records = []
    for session, group in zip(sessions, expected_groups, strict=True):
        if len(session) != len(group):
            where_line = session[0][0] if session else len(lines)
            raise InputError(
                f"{len(session)} prediction(s) here, expected {len(group)} (one per gold query)",
                path=path,
                line=where_line,
            )
        for (_, sql), i in zip(session, group, strict=True):
            records.append({"case_id": cases[i]["id"], "query": sql})
    return records
