"""Database variants in the spirit of test-suite accuracy (Zhong et al., 2020), derived from
a sample of the database and the hints of both queries: rows deleted and duplicated (fresh
values in key columns), values perturbed within the column's type and observed domain,
boundary values from the queries' literals, NULLs where the column allows them, ties under
an ORDER BY ... LIMIT, tables emptied or cut to a row. Deterministic from a seed; the
declared constraints are enforced when a variant is built (`_build`)."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from queryeval.verify._build import Data
from queryeval.verify._hints import Hints
from queryeval.verify._schema import Schema, Table


@dataclass
class Variant:
    """A named variant: the rows of every table it holds."""

    name: str
    data: Data


def rng_for(seed: int, *parts: str) -> random.Random:
    """A generator seeded by `seed` and `parts` (stable across processes and machines).

    >>> rng_for(0, "a").random() == rng_for(0, "a").random()
    True
    """
    digest = hashlib.sha256("\0".join([str(seed), *parts]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class Observed:
    """What the sample holds per column: its values, whether any is NULL, its range."""

    def __init__(self, schema: Schema, base: Data) -> None:
        self.values: dict[tuple[str, str], list[Any]] = {}
        self.nulls: set[tuple[str, str]] = set()
        self.sets: dict[tuple[str, str], set[Any]] = {}
        for name, rows in base.items():
            for i, column in enumerate(schema.tables[name].columns):
                seen: list[Any] = []
                hashed: set[Any] = set()
                for row in rows:
                    value = row[i]
                    if value is None:
                        self.nulls.add((name, column))
                        continue
                    try:
                        if value in hashed:
                            continue
                        hashed.add(value)
                    except TypeError:
                        pass
                    seen.append(value)
                self.values[(name, column)] = seen
                self.sets[(name, column)] = hashed

    def holds(self, table: str, column: str, value: Any) -> bool:
        """Whether the sample holds `value` in the column (NULL: whether it holds one)."""
        if value is None:
            return (table, column) in self.nulls
        try:
            return value in self.sets.get((table, column), set())
        except TypeError:
            return True

    def range(self, table: str, column: str) -> tuple[Any, Any] | None:
        """(min, max) of the column's numbers or dates in the sample, None if it has none."""
        values = [v for v in self.values.get((table, column), ())
                  if isinstance(v, int | float | dt.date) and not isinstance(v, bool)]  # fmt: skip
        if not values:
            return None
        try:
            return min(values), max(values)
        except TypeError:
            return None


def generate(schema: Schema, base: Data, hints: Hints, *, seed: int, count: int,
             observed_only: bool, salt: str = "") -> list[Variant]:  # fmt: skip
    """Up to `count` variants of `base` (the rows of the tables the queries need), the
    targeted ones first (boundaries, NULLs, ties, duplicates, empty tables), then random
    mixes. With `observed_only`, a row holding a value the sample never holds is left out
    (so no witness assumes anything the database does not show)."""
    observed = Observed(schema, base)
    varied = [t for t in schema.tables if t in hints.tables and t in base] or [
        t for t in base if base[t]
    ]
    maker = _Maker(schema, base, hints, observed, varied)
    targeted: list[tuple[str, Callable[[random.Random], Data]]] = [("sample", lambda r: base)]
    for t, c, op, value in hints.literals:
        if t in base:
            targeted.append((f"boundary {t}.{c} {op} {value!r}",
                             _bind(maker.boundary, t, c, op, value)))  # fmt: skip
    for t, c in sorted(hints.ordered):
        if t in base:
            targeted.append((f"ties on {t}.{c}", _bind(maker.ties, t, c)))
    for t, c in sorted(hints.columns):
        if t in base and c not in schema.tables[t].not_null:
            targeted.append((f"NULLs in {t}.{c}", _bind(maker.nulls, t, c)))
    for t in varied:
        targeted.append((f"duplicates in {t}", _bind(maker.duplicates, t)))
    for t in varied:
        targeted.append((f"one row of {t}", _bind(maker.cut, t, 1)))
        targeted.append((f"{t} empty", _bind(maker.cut, t, 0)))
    variants: list[Variant] = []
    seen: set[str] = set()
    for name, make in targeted:
        if len(variants) >= max(1, count * 2 // 3):
            break
        data = make(rng_for(seed, salt, "targeted", name))
        _add(variants, seen, name, data, schema, observed, observed_only)
    ops = [maker.delete, maker.perturb, maker.duplicates_any, maker.nulls_any]
    for i in range(count * 3):
        if len(variants) >= count:
            break
        rng = rng_for(seed, salt, "mix", str(i))
        data = base
        names: list[str] = []
        for _ in range(rng.randint(1, 3)):
            mix = rng.choice(ops)
            data = mix(rng, data)
            names.append(mix.__name__.removesuffix("_any"))
        _add(variants, seen, f"random {i} ({', '.join(names)})", data, schema, observed,
             observed_only)  # fmt: skip
    return variants


def _observed_row(observed: Observed, schema: Schema, table: str, row: tuple[Any, ...]) -> bool:
    columns = schema.tables[table].columns
    return all(observed.holds(table, c, v) for c, v in zip(columns, row, strict=False))


def _bind(fn: Callable[..., Data], *args: Any) -> Callable[[random.Random], Data]:
    return lambda rng: fn(rng, *args)


def _add(variants: list[Variant], seen: set[str], name: str, data: Data, schema: Schema,
         observed: Observed, observed_only: bool) -> None:  # fmt: skip
    if observed_only:
        data = {t: [r for r in rows if _observed_row(observed, schema, t, r)]
                for t, rows in data.items()}  # fmt: skip
    key = repr(sorted((t, rows) for t, rows in data.items()))
    if key in seen:
        return
    seen.add(key)
    variants.append(Variant(name, data))


class _Maker:
    """The variant operators; each returns new data and leaves its input alone."""

    def __init__(self, schema: Schema, base: Data, hints: Hints, observed: Observed,
                 varied: list[str]) -> None:  # fmt: skip
        self.schema = schema
        self.base = base
        self.hints = hints
        self.observed = observed
        self.varied = varied

    # -- helpers --------------------------------------------------------------------------

    def _table(self, name: str) -> Table:
        return self.schema.tables[name]

    def _index(self, table: str, column: str) -> int:
        return list(self._table(table).columns).index(column)

    def _fresh(self, table: str, rows: list[tuple[Any, ...]], row: tuple[Any, ...],
               n: int) -> tuple[Any, ...] | None:  # fmt: skip
        """`row` with new values in one column of each key (None if a key cannot get one)."""
        out = list(row)
        for key in self._table(table).keys:
            for column in key:
                i = self._index(table, column)
                value = _new_value(out[i], [r[i] for r in rows], n)
                if value is not None:
                    out[i] = value
                    break
            else:
                return None
        return tuple(out)

    def _pick(self, rng: random.Random, rows: list[Any], share: float) -> set[int]:
        if not rows:
            return set()
        k = max(1, round(len(rows) * share))
        return set(rng.sample(range(len(rows)), min(k, len(rows))))

    # -- targeted -------------------------------------------------------------------------

    def boundary(self, rng: random.Random, table: str, column: str, op: str, value: Any
                 ) -> Data:  # fmt: skip
        """Rows of `table` copied (fresh keys) with the column at the literal and just
        beside it; some kept rows set to them too."""
        rows = list(self.base[table])
        if not rows:
            return self.base
        i = self._index(table, column)
        sample = next((r[i] for r in rows if r[i] is not None), None)
        values = _near(value, op, sample)
        added: list[tuple[Any, ...]] = []
        for n, v in enumerate(values):
            template = rows[rng.randrange(len(rows))]
            copy = list(template)
            copy[i] = v
            fresh = self._fresh(table, rows + added, tuple(copy), n + 1)
            if fresh is not None:
                added.append(fresh)
        changed = list(rows)
        for j in self._pick(rng, rows, 0.2):
            changed[j] = tuple(values[j % len(values)] if k == i else x
                               for k, x in enumerate(rows[j]))  # fmt: skip
        return {**self.base, table: changed + added}

    def ties(self, rng: random.Random, table: str, column: str) -> Data:
        """Two rows (or more) sharing the column's largest and smallest values."""
        rows = list(self.base[table])
        i = self._index(table, column)
        present = [r for r in rows if r[i] is not None]
        if not present:
            return self.base
        try:
            top = max(present, key=lambda r: r[i])[i]
            low = min(present, key=lambda r: r[i])[i]
        except TypeError:
            return self.base
        added: list[tuple[Any, ...]] = []
        for n, v in enumerate((top, low)):
            template = list(rows[rng.randrange(len(rows))])
            template[i] = v
            fresh = self._fresh(table, rows + added, tuple(template), n + 1)
            if fresh is not None:
                added.append(fresh)
        return {**self.base, table: rows + added}

    def nulls(self, rng: random.Random, table: str, column: str, data: Data | None = None
              ) -> Data:  # fmt: skip
        """NULL in the column of about a third of the rows."""
        data = data if data is not None else self.base
        rows = list(data[table])
        i = self._index(table, column)
        for j in self._pick(rng, rows, 0.34):
            rows[j] = tuple(None if k == i else x for k, x in enumerate(rows[j]))
        return {**data, table: rows}

    def duplicates(self, rng: random.Random, table: str, data: Data | None = None) -> Data:
        """About a third of the rows again, with fresh key values."""
        data = data if data is not None else self.base
        rows = list(data[table])
        added: list[tuple[Any, ...]] = []
        for n, j in enumerate(sorted(self._pick(rng, rows, 0.34))):
            fresh = self._fresh(table, rows + added, rows[j], n + 1)
            if fresh is not None:
                added.append(fresh)
        return {**data, table: rows + added}

    def cut(self, rng: random.Random, table: str, keep: int) -> Data:
        """The table cut to `keep` rows."""
        rows = list(self.base[table])
        chosen = sorted(rng.sample(range(len(rows)), min(keep, len(rows))))
        return {**self.base, table: [rows[j] for j in chosen]}

    # -- random mixes ---------------------------------------------------------------------

    def delete(self, rng: random.Random, data: Data) -> Data:
        """About half of each varied table's rows deleted."""
        out = dict(data)
        for t in self.varied:
            out[t] = [r for r in data[t] if rng.random() < 0.5]
        return out

    def perturb(self, rng: random.Random, data: Data) -> Data:
        """Values of the queries' columns replaced by another observed value or a near one."""
        out = dict(data)
        columns = sorted(c for c in self.hints.columns if c[0] in data) or [
            (t, c) for t in self.varied for c in self._table(t).columns
        ]
        for t, c in rng.sample(columns, min(len(columns), rng.randint(1, 3))):
            rows = list(out[t])
            i = self._index(t, c)
            pool = self.observed.values.get((t, c)) or []
            for j in self._pick(rng, rows, 0.3):
                old = rows[j][i]
                new = rng.choice(pool) if pool and rng.random() < 0.7 else _nudge(old, rng)
                rows[j] = tuple(new if k == i else x for k, x in enumerate(rows[j]))
            out[t] = rows
        return out

    def duplicates_any(self, rng: random.Random, data: Data) -> Data:
        """`duplicates` in one varied table."""
        return self.duplicates(rng, rng.choice(self.varied), data) if self.varied else data

    def nulls_any(self, rng: random.Random, data: Data) -> Data:
        """`nulls` in one nullable column the queries read."""
        columns = sorted((t, c) for t, c in self.hints.columns
                         if t in data and c not in self._table(t).not_null)  # fmt: skip
        if not columns:
            return data
        t, c = rng.choice(columns)
        return self.nulls(rng, t, c, data)


def _near(value: Any, op: str, sample: Any) -> list[Any]:
    """The literal and values just beside it, of the column's kind where it can tell."""
    if isinstance(value, str) and op in ("like", "ilike"):
        core = value.replace("%", "").replace("_", "")
        return [core, "x" + core + "x", core.upper(), core.lower(), core + " "]
    if isinstance(value, str):
        if isinstance(sample, int | float) and not isinstance(sample, bool):
            try:
                number = float(value)
                value = int(number) if number.is_integer() else number
            except ValueError:
                return [value]
        else:
            out = [value, value.upper(), value.lower(), value + " ", value + "x"]
            return list(dict.fromkeys(out))
    if isinstance(value, bool):
        return [value]
    if isinstance(value, int) and not isinstance(sample, float):
        return [value, value - 1, value + 1]
    if isinstance(value, int | float):
        return [float(value), float(value) - 0.5, float(value) + 0.5, float(value) + 1e-6]
    return [value]


def _new_value(value: Any, existing: list[Any], n: int) -> Any:
    """A value of `value`'s kind that `existing` does not hold (None if none is made)."""
    taken = set()
    for v in existing:
        with contextlib.suppress(TypeError):
            taken.add(v)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        top = max((v for v in existing if isinstance(v, int) and not isinstance(v, bool)),
                  default=value)  # fmt: skip
        return top + n
    if isinstance(value, float):
        high = max((v for v in existing if isinstance(v, int | float)), default=value)
        return float(high) + n
    if isinstance(value, str):
        for k in range(n, n + 1000):
            candidate = f"{value}~{k}"
            if candidate not in taken:
                return candidate
        return None
    if isinstance(value, dt.datetime | dt.date):
        return max((v for v in existing if type(v) is type(value)), default=value) + dt.timedelta(
            days=n
        )
    return None


def _nudge(value: Any, rng: random.Random) -> Any:
    """A value near `value` of the same kind."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + rng.choice((-1, 1))
    if isinstance(value, float):
        return value + rng.choice((-0.5, 0.5))
    if isinstance(value, str):
        return value + "x" if rng.random() < 0.5 else value[:-1]
    if isinstance(value, dt.date):
        return value + dt.timedelta(days=rng.choice((-1, 1)))
    return value
