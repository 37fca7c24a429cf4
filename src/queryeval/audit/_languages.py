"""What a KQL or Cypher gold's text shows, for `nondeterministic` and `unknown_literal` on
the same terms as SQL's (`_static`, sqlglot): its row-order patterns, and the string
literals it compares with a column (resolved to a table, or a label, only where exactly one
fits), with the queries that show whether a literal occurs and which values a column holds.
No maintained parser of either language is on PyPI for this: the KQL reading is regular
expressions over the text outside strings; the Cypher one reads the lexer's tokens
(`queryeval.languages.cypher`) and its variable bindings."""

from __future__ import annotations

import re

from queryeval.audit._static import Comparison

# -- KQL --------------------------------------------------------------------------------------

_KQL_STRING = r"(?:@?\"(?:[^\"\\]|\\.)*\"|@?'(?:[^'\\]|\\.)*')"
_KQL_NAME = r"(?:\[\s*(?:'[^']*'|\"[^\"]*\")\s*\]|[A-Za-z_]\w*)"
_KQL_COMPARE = re.compile(rf"({_KQL_NAME})\s*(==|=~|!=|!~)\s*({_KQL_STRING})")
_KQL_COMPARE_REVERSED = re.compile(rf"({_KQL_STRING})\s*(==|=~|!=|!~)\s*({_KQL_NAME})")
_KQL_IN = re.compile(rf"({_KQL_NAME})\s+(in~?|!in~?)\s*\(([^()]*)\)")
_KQL_OPS = {"==": "eq", "!=": "neq", "=~": "ieq", "!~": "ineq", "in": "in", "!in": "in",
            "in~": "iin", "!in~": "iin"}  # fmt: skip
_KQL_PIPE = re.compile(r"\|")


def _kql_unquote(text: str) -> str:
    text = text[1:] if text.startswith("@") else text
    body = text[1:-1]
    if text.startswith("@"):
        return body
    return re.sub(r"\\(.)", lambda m: m.group(1), body)


def _kql_name(text: str) -> str:
    if text.startswith("["):
        inner = text[1:-1].strip()
        return inner[1:-1]
    return text


def _mask_strings(query: str, pattern: str) -> str:
    """`query` with every string literal's body blanked (keywords inside strings unseen)."""
    return re.sub(pattern, lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2)
                  + m.group(0)[-1], query)  # fmt: skip


def kql_patterns(query: str) -> list[str]:
    """The row-order patterns of a KQL query: `take without sort` (take/limit with no sort,
    order or top before it), `top or sort ... take` (ties may decide), `any row` (any(),
    take_any()), `arg_max/arg_min` (ties decide the row), `sample`.

    >>> kql_patterns("T | take 3")
    ['take without sort']
    >>> kql_patterns("T | top 1 by Age")
    ['top or sort ... take']
    >>> kql_patterns("T | summarize arg_max(Age, *) by City | where Name == 'take 1'")
    ['arg_max/arg_min']
    >>> kql_patterns("T | sort by Age, Name | project Name")
    []
    """
    text = _mask_strings(query, _KQL_STRING)
    found: list[str] = []
    sorted_before = False
    for stage in _KQL_PIPE.split(text):
        words = stage.strip().split()
        head = words[0].lower() if words else ""
        if head in ("sort", "order"):
            sorted_before = True
        elif head in ("take", "limit"):
            found.append("top or sort ... take" if sorted_before else "take without sort")
        elif head == "top" or head == "top-nested":
            found.append("top or sort ... take")
        elif head in ("sample", "sample-distinct"):
            found.append("sample")
        if re.search(r"\b(take_any|any|take_anyif|anyif)\s*\(", stage):
            found.append("any row")
        if re.search(r"\barg_(max|min)\s*\(", stage):
            found.append("arg_max/arg_min")
    return list(dict.fromkeys(found))


def kql_comparisons(query: str, schema: dict[str, list[str]]) -> list[Comparison]:
    """The string literals a KQL query compares with a column (`==`, `!=`, `=~`, `!~`,
    `in`, `in~`), the column resolved to the one table of `schema` the query names that
    has it (a column several named tables have is left out).

    >>> kql_comparisons("Logs | where Level =~ 'eror' or Service in ('auth', 'x')",
    ...                 {"Logs": ["Level", "Service"], "Other": ["Level"]})
    ... # doctest: +NORMALIZE_WHITESPACE
    [Comparison(table='Logs', column='Level', op='ieq', literal='eror'),
     Comparison(table='Logs', column='Service', op='in', literal='auth'),
     Comparison(table='Logs', column='Service', op='in', literal='x')]
    """
    masked = _mask_strings(query, _KQL_STRING)
    words = set(re.findall(r"[A-Za-z_]\w*", masked))
    words |= {_kql_name(m) for m in re.findall(r"\[\s*(?:'[^']*'|\"[^\"]*\")\s*\]", query)}
    named = [t for t in schema if t in words]

    def resolve(column: str) -> str | None:
        owners = [t for t in named if column in schema[t]]
        return owners[0] if len(owners) == 1 else None

    out: list[Comparison] = []
    for m in _KQL_COMPARE.finditer(query):
        column = _kql_name(m.group(1))
        table = resolve(column)
        if table is not None:
            out.append(Comparison(table, column, _KQL_OPS[m.group(2)], _kql_unquote(m.group(3))))
    for m in _KQL_COMPARE_REVERSED.finditer(query):
        column = _kql_name(m.group(3))
        table = resolve(column)
        if table is not None:
            out.append(Comparison(table, column, _KQL_OPS[m.group(2)], _kql_unquote(m.group(1))))
    for m in _KQL_IN.finditer(query):
        column = _kql_name(m.group(1))
        table = resolve(column)
        if table is None:
            continue
        for item in re.finditer(_KQL_STRING, m.group(3)):
            out.append(Comparison(table, column, _KQL_OPS[m.group(2)], _kql_unquote(item.group())))
    return list(dict.fromkeys(out))


def _kql_quote(name: str) -> str:
    return "['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"


def _kql_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def kql_occurrence(comp: Comparison) -> str:
    """The KQL query that shows whether the literal occurs in the column (a row: it does).

    >>> kql_occurrence(Comparison("Logs", "Level", "ieq", "eror"))
    '[\\'Logs\\'] | where [\\'Level\\'] =~ "eror" | take 1'
    """
    op = "=~" if comp.op in ("ieq", "ineq", "iin") else "=="
    return (f"{_kql_quote(comp.table)} | where {_kql_quote(comp.column)} {op} "
            f"{_kql_literal(comp.literal)} | take 1")  # fmt: skip


def kql_values(table: str, column: str, limit: int = 5000) -> str:
    """The KQL query listing the column's distinct values as text."""
    return (f"{_kql_quote(table)} | where isnotnull({_kql_quote(column)}) "
            f"| distinct v = tostring({_kql_quote(column)}) | take {int(limit)}")  # fmt: skip


# -- Cypher -----------------------------------------------------------------------------------

_CY_STRING = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_CY_OPS = {"=": "eq", "<>": "neq", "STARTS WITH": "starts", "ENDS WITH": "ends",
           "CONTAINS": "contains", "IN": "in"}  # fmt: skip


def cypher_patterns(query: str) -> list[str]:
    """The row-order patterns of a Cypher query: `limit without order by`, `order by ...
    limit` (ties may decide), `collect without order by` (a list in storage order).

    >>> cypher_patterns("MATCH (n:P) RETURN n.name LIMIT 2")
    ['limit without order by']
    >>> cypher_patterns("MATCH (n:P) RETURN n.name ORDER BY n.age LIMIT 1")
    ['order by ... limit']
    >>> cypher_patterns("MATCH (n:P) RETURN collect(n.name) AS names")
    ['collect without order by']
    >>> cypher_patterns("MATCH (n:P) RETURN n.name AS x ORDER BY x")
    []
    """
    text = _mask_strings(query, _CY_STRING)
    found: list[str] = []
    ordered = re.search(r"\bORDER\s+BY\b", text, re.IGNORECASE) is not None
    if re.search(r"\b(LIMIT|SKIP)\b", text, re.IGNORECASE):
        found.append("order by ... limit" if ordered else "limit without order by")
    if re.search(r"\bcollect\s*\(", text, re.IGNORECASE) and not ordered:
        found.append("collect without order by")
    return found


def cypher_comparisons(query: str, schema: dict[str, list[str]]) -> list[Comparison]:
    """The string literals a Cypher query compares with a property (`=`, `<>`, `STARTS
    WITH`, `ENDS WITH`, `CONTAINS`, `IN [...]`, `{key: '...'}` in a pattern), resolved to
    the label (or `[:TYPE]`) of `schema` ({label or [:TYPE]: keys}) the variable is bound
    to; a variable bound to no label is left out.

    >>> cypher_comparisons("MATCH (p:Person {name: 'Tom'})-[:ACTED_IN]->(m:Movie) "
    ...                    "WHERE m.title STARTS WITH 'The' RETURN p",
    ...                    {"Person": ["name"], "Movie": ["title"]})
    ... # doctest: +NORMALIZE_WHITESPACE
    [Comparison(table='Movie', column='title', op='starts', literal='The'),
     Comparison(table='Person', column='name', op='eq', literal='Tom')]
    """
    from queryeval.languages.cypher import label_bindings, literal_comparisons

    bound: dict[str, str] = {}
    for var, label, relationship in label_bindings(query):
        if var:
            bound[var] = f"[:{label}]" if relationship else label
    out: list[Comparison] = []
    for comp in literal_comparisons(query):
        if not isinstance(comp.value, str) or comp.op not in _CY_OPS:
            continue  # strings only: what a value listing can show misspelt
        if comp.pattern is None:  # `v.key op literal`: the variable's label
            table = bound.get(comp.var or "")
        elif comp.label is None:  # a pattern's map without a label
            continue
        else:
            table = f"[:{comp.label}]" if comp.pattern == "relationship" else comp.label
        if table is not None and comp.key in schema.get(table, ()):
            out.append(Comparison(table, comp.key, _CY_OPS[comp.op], comp.value))
    return list(dict.fromkeys(out))


def _cy_name(text: str) -> str:
    return "`" + text.replace("`", "``") + "`"


def _cy_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _cy_match(table: str) -> str:
    if table.startswith("[:"):
        return f"MATCH ()-[x:{_cy_name(table[2:-1])}]->()"
    return f"MATCH (x:{_cy_name(table)})"


def cypher_occurrence(comp: Comparison) -> str:
    """The Cypher query that shows whether the literal occurs in the property (a row: it
    does).

    >>> cypher_occurrence(Comparison("Person", "name", "eq", "Tom"))
    "MATCH (x:`Person`) WHERE x.`name` = 'Tom' RETURN 1 AS found LIMIT 1"
    """
    op = {"starts": "STARTS WITH", "ends": "ENDS WITH", "contains": "CONTAINS"}.get(comp.op, "=")
    return (f"{_cy_match(comp.table)} WHERE x.{_cy_name(comp.column)} {op} "
            f"{_cy_literal(comp.literal)} RETURN 1 AS found LIMIT 1")  # fmt: skip


def cypher_values(table: str, column: str, limit: int = 5000) -> str:
    """The Cypher query listing the property's distinct values as text."""
    return (f"{_cy_match(table)} WHERE x.{_cy_name(column)} IS NOT NULL "
            f"RETURN DISTINCT toString(x.{_cy_name(column)}) AS v LIMIT {int(limit)}")  # fmt: skip
