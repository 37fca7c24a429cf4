"""The PostgreSQL engine on a server queryeval starts (one for the session): rows, outcome
kinds, the read-only sandbox (parser, READ ONLY transaction, a SELECT-only role), the time
limit, the row cap, the fixture loader; and a user's URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from task_support import NO_POSTGRES, club_engine, needs_postgres

pytestmark = needs_postgres


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("pg")
    built = club_engine("postgres", folder, max_rows=2)
    yield built
    built.close()


def test_rows_and_types(engine: Any) -> None:
    run = engine.execute("SELECT name, score FROM member WHERE country = 'Spain' ORDER BY name")
    assert run.ok and run.result.rows == (("Bo", 90), ("Ed", 55))
    assert engine.schema()["tables"]["member"] == {
        "id": "integer", "name": "text", "country": "text", "score": "integer"}  # fmt: skip


def test_row_cap(engine: Any) -> None:
    run = engine.execute("SELECT * FROM member")
    assert run.ok and run.outcome.truncated and run.result.num_rows == 2


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("SELECT nope FROM member", "schema"),
        ("SELEC 1", "syntax"),
        ("SELECT 1/0", "runtime"),
        ("UPDATE member SET score = 0", "refused"),
        ("SELECT pg_read_file('/etc/passwd')", "refused"),  # the role, not the parser
        ("SELECT pg_sleep(10)", "timeout"),
    ],
)
def test_outcome_kinds(engine: Any, query: str, kind: str) -> None:
    run = engine.execute(query)
    assert run.outcome.kind == kind, run.outcome.message
    if kind == "timeout":
        assert run.outcome.elapsed_s < 8


def test_reader_role_cannot_write_past_the_parser(engine: Any) -> None:
    """Even outside the sandbox's READ ONLY transaction, the reader role may not write."""
    import psycopg

    with psycopg.connect(engine.conninfo, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE member SET score = 0")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE x (a int)")


def test_sql_seed_and_url(tmp_path: Path, engine: Any) -> None:
    """A .sql seed is loaded by psql; the same database over a URL reads the same rows."""
    from queryeval.config import DatabaseConfig
    from queryeval.engines import build_engine
    from queryeval.engines._postgres_server import READER

    seed = tmp_path / "shop.sql"
    seed.write_text("CREATE TABLE item (id int, label text);\n"
                    "COPY item FROM stdin;\n1\tpen\n2\tink\n\\.\n")  # fmt: skip
    shop = build_engine("shop", DatabaseConfig(engine="postgres", fixture=str(seed)),
                        tmp_path, tmp_path / "cache")  # fmt: skip
    assert shop.execute("SELECT label FROM item ORDER BY id").result.rows == (("pen",), ("ink",))
    server = engine.server
    role = server.roles[READER]
    url = f"postgresql://{role.name}@127.0.0.1:{server.port}/{shop.database}"
    remote = build_engine("shop", DatabaseConfig(engine="postgres", url=url,
                          options={"password": role.password}), tmp_path, tmp_path)  # fmt: skip
    assert remote.execute("SELECT count(*) FROM item").result.rows == ((2,),)
    assert remote.execute("DELETE FROM item").outcome.kind == "refused"
    assert "password" not in remote.identity and role.password not in remote.identity
    remote.close()
    shop.close()


def test_skip_reason_names_the_package() -> None:
    assert NO_POSTGRES is None or "postgresql" in NO_POSTGRES
