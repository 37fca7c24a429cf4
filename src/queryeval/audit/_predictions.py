"""Systems' predictions for `disputed`: from a finished run (its results.jsonl, every
system's final query), a predictions JSONL file (case_id, query; the file's stem names the
system) or the suite's systems with saved predictions."""

from __future__ import annotations

from pathlib import Path

from queryeval.config import SuiteConfig
from queryeval.errors import InputError


def read_predictions(
    paths: list[Path], suite: SuiteConfig, systems: list[str] | None
) -> dict[str, dict[str, str]]:
    """{system: {case id: query}} from `paths` and the suite's `systems` (by name; with no
    paths and no names: every suite system with a predictions file)."""
    out: dict[str, dict[str, str]] = {}
    for path in paths:
        if path.is_dir():
            _from_run(path, out)
        elif path.is_file():
            out.setdefault(path.stem, {}).update(_from_jsonl(path, "query"))
        else:
            raise InputError("no such file or run folder", path=path, where="--predictions")
    known = {s.name: s for s in suite.systems}
    if systems is None and not paths:
        systems = [s.name for s in suite.systems if getattr(s, "predictions", None)]
    for name in systems or []:
        system = known.get(name)
        file = getattr(system, "predictions", None) if system is not None else None
        if system is None or not file:
            raise InputError(
                f"expected a system of the suite with saved predictions "
                f"({', '.join(sorted(known))}), not {name!r}",
                where="--systems",
            )
        out.setdefault(name, {}).update(_from_jsonl(suite.base_dir / str(file), "query"))
    return out


def _from_run(folder: Path, out: dict[str, dict[str, str]]) -> None:
    """Every system's final query of a finished run, read by the run log's reader."""
    from queryeval.log import RESULTS, iter_records

    if not (folder / RESULTS).is_file():
        raise InputError(
            f"expected a run folder with {RESULTS}", path=folder, where="--predictions"
        )
    for record in iter_records(folder):
        attempts = ((record.get("output") or {}).get("attempts")) or []
        query = attempts[-1].get("query") if attempts else None
        if isinstance(query, str) and query.strip():
            out.setdefault(str(record["system"]), {})[str(record["case_id"])] = query


def _from_jsonl(path: Path, key: str) -> dict[str, str]:
    import orjson

    if not path.is_file():
        raise InputError("no such predictions file", path=path)
    out: dict[str, str] = {}
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise InputError(f"not JSON: {exc}", path=path, line=n) from None
            if not isinstance(record, dict) or "case_id" not in record:
                raise InputError("expected an object with case_id and query", path=path, line=n)
            query = record.get(key)
            if isinstance(query, str) and query.strip():
                out[str(record["case_id"])] = query
    return out
