"""YAML loading that remembers where each value came from, so errors can name the line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

try:  # the C loader is ~10x faster; fall back to pure Python where libyaml is missing
    from yaml import CSafeLoader as _Base
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Base  # type: ignore[assignment]

from queryeval.errors import InputError


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
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read file ({exc.strerror})", path=path) from exc
    loader = _Loader(text)
    docs: list[Located] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            lines: dict[Loc, int] = {}
            _index(node, (), lines)
            docs.append(Located(loader.construct_document(node), lines, path))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise InputError(
            f"invalid YAML: {exc.problem or exc.context}", path=path, line=line
        ) from exc
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from exc
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
