"""Graph seeds: a small YAML file describing nodes and relationships, for fixture graphs.

    nodes:
      Person:
        - {key: keanu, name: Keanu Reeves, born: 1964}
      Movie:
        - {key: matrix, title: The Matrix, released: 1999}
    relationships:
      ACTED_IN:
        - {from: keanu, to: matrix, roles: [Neo]}

`key` names a node for `from`/`to` only and is not stored; every other field is a property.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval._yaml import load_yaml_documents
from queryeval.errors import InputError


@dataclass(frozen=True)
class SeedNode:
    key: str
    label: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class SeedRelationship:
    type: str
    start: str
    end: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class GraphSeed:
    nodes: list[SeedNode] = field(default_factory=list)
    relationships: list[SeedRelationship] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return sorted({n.label for n in self.nodes})

    @property
    def relationship_types(self) -> list[str]:
        return sorted({r.type for r in self.relationships})


def load_graph_seed(path: Path) -> GraphSeed:
    """Read and check a graph seed; problems are InputErrors naming the file and line."""
    docs = load_yaml_documents(path)
    if len(docs) != 1 or not isinstance(docs[0].data, dict):
        raise InputError("expected one mapping with 'nodes' and 'relationships'", path=path)
    doc = docs[0]
    data = doc.data
    nodes: list[SeedNode] = []
    keys: set[str] = set()
    for label, items in (data.get("nodes") or {}).items():
        for i, item in enumerate(items or []):
            where = ("nodes", label, i)
            if not isinstance(item, dict) or "key" not in item:
                raise InputError("expected a mapping with a 'key'", path=path,
                                 line=doc.line_of(where), where=f"nodes.{label}[{i}]")  # fmt: skip
            key = str(item["key"])
            if key in keys:
                raise InputError(f"duplicate node key {key!r}", path=path,
                                 line=doc.line_of(where), where=f"nodes.{label}[{i}]")  # fmt: skip
            keys.add(key)
            props = {k: v for k, v in item.items() if k != "key"}
            nodes.append(SeedNode(key, str(label), props))
    rels: list[SeedRelationship] = []
    for rel_type, items in (data.get("relationships") or {}).items():
        for i, item in enumerate(items or []):
            where = ("relationships", rel_type, i)
            place = f"relationships.{rel_type}[{i}]"
            if not isinstance(item, dict) or "from" not in item or "to" not in item:
                raise InputError("expected a mapping with 'from' and 'to'", path=path,
                                 line=doc.line_of(where), where=place)  # fmt: skip
            for end in ("from", "to"):
                if str(item[end]) not in keys:
                    raise InputError(f"unknown node key {item[end]!r} in '{end}'", path=path,
                                     line=doc.line_of(where), where=place)  # fmt: skip
            props = {k: v for k, v in item.items() if k not in ("from", "to")}
            rels.append(SeedRelationship(str(rel_type), str(item["from"]), str(item["to"]), props))
    return GraphSeed(nodes, rels)
