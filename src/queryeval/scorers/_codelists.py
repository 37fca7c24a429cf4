"""SDMX codelists from SDMX-ML structure files (via sdmx1), to check selected codes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.errors import InputError


def load_codelists(path: Path) -> dict[str, dict[str, str]]:
    """{codelist id: {code id: name}} from an SDMX-ML structure message."""
    import sdmx

    try:
        msg = sdmx.read_sdmx(path)
    except FileNotFoundError:
        raise InputError("codelist file not found", path=path) from None
    except Exception as exc:
        raise InputError(f"cannot read SDMX-ML structure: {exc}", path=path) from None
    lists = getattr(msg, "codelist", None)
    if not lists:
        raise InputError("no codelists in this SDMX-ML file", path=path)
    return {cl.id: {code.id: str(code.name) for code in cl} for cl in lists.values()}


def _codelist_for(dim: str, lists: Mapping[str, Any], mapping: Mapping[str, str]) -> str | None:
    for candidate in (mapping.get(dim), f"CL_{dim}", dim):
        if candidate and candidate in lists:
            return candidate
    return None


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def check_and_name(
    selection: Sequence[Any],
    lists: Mapping[str, Mapping[str, str]],
    mapping: Mapping[str, str],
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The selection with missing names filled from the codelists, and the codes that no
    codelist knows ({dimension, id, codelist})."""
    unknown: list[dict[str, str]] = []
    out: list[dict[str, Any]] = []
    for dataset in selection:
        dims = []
        for dim in _get(dataset, "dimensions") or ():
            name = str(_get(dim, "dimension_name"))
            cl_id = _codelist_for(name, lists, mapping)
            codes = lists.get(cl_id, {}) if cl_id else {}
            values = []
            for v in _get(dim, "values") or ():
                code, label = str(_get(v, "id")), _get(v, "name")
                if cl_id is not None and code not in codes:
                    unknown.append({"dimension": name, "id": code, "codelist": cl_id})
                values.append({"id": code, "name": label or codes.get(code)})
            dims.append({"dimension_name": name, "values": values})
        out.append({"dataset_id": str(_get(dataset, "dataset_id")), "dimensions": dims})
    return out, unknown
