"""YAML loading that remembers where each value came from, so errors can name the line.

Bounded against hostile input before anything walks a document expanded: nesting past
`MAX_DEPTH` levels, aliases that expand a document by more than `MAX_ALIAS_VALUES` values
(an anchor bomb, "billion laughs") and an alias inside its own anchor are InputErrors, as
are text that is not UTF-8 (a byte-order mark is dropped) and anything nested past the
interpreter's recursion limit.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

try:  # the C loader is ~10x faster; fall back to pure Python where libyaml is missing
    from yaml import CSafeLoader as _Base
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Base  # type: ignore[assignment]

from queryeval._inputs import read_text
from queryeval.errors import InputError

MAX_DEPTH = 200  # levels of nested collections
MAX_ALIAS_VALUES = 1_000_000  # values aliases may add to a document


class _Loader(_Base):
    """The safe loader, reading YAML 1.2's floats too: YAML 1.1 (PyYAML) wants a dot in a
    float, so `rel_tol: 1e-9` would be the string "1e-9"."""


# A copy of the resolvers (lists included), so PyYAML's own loaders are left as they were.
_Loader.yaml_implicit_resolvers = {
    first: list(resolvers) for first, resolvers in _Base.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)

Loc = tuple[str | int, ...]


class Located:
    """A YAML document and the 1-based line of every path inside it."""

    def __init__(self, data: Any, lines: dict[Loc, int], path: Path) -> None:
        self.data = data
        self.lines = lines
        self.path = path

    def line_of(self, loc: Loc) -> int | None:
        """The line of `loc`, or of its nearest ancestor that has one."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get(())


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_shape(root: yaml.Node, path: Path) -> None:
    """Refuse a composed document (aliases are shared nodes, not yet expanded) nested past
    `MAX_DEPTH`, expanded by its aliases past `MAX_ALIAS_VALUES`, or holding an alias inside
    its own anchor. Iterative: the check itself cannot overflow a stack."""
    sizes: dict[int, int] = {}  # node -> values in it, aliases expanded
    heights: dict[int, int] = {}
    ancestors: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            heights[key] = 1 + max((heights[id(c)] for c in children), default=0)
            ancestors.discard(key)
            if heights[key] > MAX_DEPTH:
                raise InputError(
                    f"nested deeper than {MAX_DEPTH} levels; expected a flatter document",
                    path=path,
                    line=node.start_mark.line + 1,
                )
            continue
        if key in sizes:
            continue
        if key in ancestors:
            raise InputError(
                "an alias inside its own anchor (a recursive document); expected a tree",
                path=path,
                line=node.start_mark.line + 1,
            )
        ancestors.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    added = sizes[id(root)] - len(sizes)
    if added > MAX_ALIAS_VALUES:
        raise InputError(
            f"aliases expand the document by {added:,} values, more than {MAX_ALIAS_VALUES:,} "
            "(an anchor bomb?); expected aliases that repeat a little",
            path=path,
            line=root.start_mark.line + 1,
        )


def _index(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _index(value_node, (*loc, key), lines)
            lines[(*loc, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, (*loc, i), lines)


def load_yaml_documents(path: Path, text: str | None = None) -> list[Located]:
    """Parse every document of a YAML file, keeping line numbers; bad YAML is an InputError."""
    if text is None:
        text = read_text(path)
    loader = _Loader(text.removeprefix("\ufeff"))
    docs: list[Located] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            check_shape(node, path)
            lines: dict[Loc, int] = {}
            _index(node, (), lines)
            docs.append(Located(loader.construct_document(node), lines, path))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise InputError(
            f"invalid YAML: {exc.problem or exc.context}", path=path, line=line
        ) from exc
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        line = text.count("\n", 0, exc.position) + 1
        code = (
            exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
        )
        why = f"unacceptable character #x{code:04x}"
        raise InputError(f"invalid YAML: {why} ({exc.reason})", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from exc
    except RecursionError:
        message = "nested too deeply to be read; expected a flatter document"
        raise InputError(message, path=path) from None
    finally:
        loader.dispose()
    return docs


def load_yaml(path: Path) -> Located:
    """Parse a single-document YAML file."""
    docs = load_yaml_documents(path)
    if not docs:
        return Located(None, {}, path)
    if len(docs) > 1:
        raise InputError("expected one YAML document, found several", path=path)
    return docs[0]
