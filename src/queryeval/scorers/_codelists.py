"""SDMX codelists from SDMX-ML structure files, to check selected codes.

sdmx1 reads every SDMX format; importing it costs about 0.5 s of CPU (it imports pandas and
requests), most of a small run's fixed cost. A plain SDMX-ML 2.1 message holding codelists
only (what a suite's codelist file is) is read with the standard library's XML parser into
exactly what sdmx1 gives (a name is its English text, else its first language's, else "";
checked against sdmx1 in tests/test_startup_codelists.py); anything else, or anything
unusual in such a file, is read by sdmx1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.errors import InputError

_MES = "{http://www.sdmx.org/resources/sdmxml/schemas/v2_1/message}"
_STR = "{http://www.sdmx.org/resources/sdmxml/schemas/v2_1/structure}"
_COM = "{http://www.sdmx.org/resources/sdmxml/schemas/v2_1/common}"
_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_SKIPPED = frozenset({_COM + "Annotations", _COM + "Description", _STR + "Parent"})


def load_codelists(path: Path) -> dict[str, dict[str, str]]:
    """{codelist id: {code id: name}} from an SDMX-ML structure message."""
    plain = read_plain_codelists(path)
    if plain is not None:
        return plain
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


def read_plain_codelists(path: Path) -> dict[str, dict[str, str]] | None:
    """What `load_codelists` gives for an SDMX-ML 2.1 structure message of codelists only
    (ids unique, every name one text per language), read without sdmx1; None for any other
    file, which sdmx1 reads (or reports)."""
    from xml.etree import ElementTree

    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    structures = root.find(_MES + "Structures") if root.tag == _MES + "Structure" else None
    if structures is None or not len(structures):
        return None
    out: dict[str, dict[str, str]] = {}
    for group in structures:
        if group.tag != _STR + "Codelists":
            return None  # other structures: sdmx1 reads them (and may refuse them)
        for codelist in group:
            cl_id = codelist.get("id")
            if codelist.tag != _STR + "Codelist" or cl_id is None or cl_id in out:
                return None
            if codelist.get("isExternalReference") == "true":
                return None
            codes: dict[str, str] = {}
            for item in codelist:
                if item.tag == _STR + "Code":
                    code, name = item.get("id"), _name(item)
                    if code is None or code in codes or name is None:
                        return None
                    codes[code] = name
                elif item.tag != _COM + "Name" and item.tag not in _SKIPPED:
                    return None
            out[cl_id] = codes
    return out or None


def _name(item: Any) -> str | None:
    """sdmx1's ``str(code.name)``: the English text, else the first language's, else "";
    None where the names are not plain (a repeated language, no text, nested elements)."""
    names: dict[str, str] = {}
    for part in item:
        if part.tag == _COM + "Name":
            lang = part.get(_LANG, "en")
            if lang in names or part.text is None or len(part):
                return None
            names[lang] = part.text
        elif part.tag not in _SKIPPED:
            return None
    return names.get("en", next(iter(names.values()), ""))


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
