"""A suite's SDMX-ML codelist file is read without sdmx1 (whose import is most of a small
run's fixed cost), into exactly what sdmx1 reads; anything unusual is left to sdmx1."""

from __future__ import annotations

from pathlib import Path

import pytest

from queryeval.scorers._codelists import load_codelists, read_plain_codelists

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sdmx" / "codelists.xml"
CODE = '<str:Code id="NGDPD">'
NAMED = (
    CODE + "\n          "
    '<com:Name xml:lang="en">Gross domestic product, current prices, U.S. dollars (billions)'
    "</com:Name>"
)


def by_sdmx1(path: Path) -> dict[str, dict[str, str]]:
    """The reference: sdmx1's reading, as load_codelists did it before."""
    import sdmx

    message = sdmx.read_sdmx(path)
    return {cl.id: {code.id: str(code.name) for code in cl} for cl in message.codelist.values()}


def variant(tmp_path: Path, old: str, new: str) -> Path:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "codelists.xml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


PLAIN = {
    "example": ("", ""),
    "languages": (NAMED, CODE + '<com:Name xml:lang="fr">PIB</com:Name>'
                  '<com:Name xml:lang="en">GDP</com:Name>'),
    "no_english": (NAMED, CODE + '<com:Name xml:lang="fr">PIB</com:Name>'),
    "no_lang": (NAMED, CODE + "<com:Name>GDP</com:Name>"),
    "unnamed": (NAMED, CODE),
    "text": (NAMED, CODE + '<com:Name xml:lang="en">  A &amp; B\n </com:Name>'
             '<com:Description xml:lang="en">d</com:Description>'),
}  # fmt: skip
UNUSUAL = {
    "repeated_language": (NAMED, NAMED + '<com:Name xml:lang="en">again</com:Name>'),
    "other_structures": ("<mes:Structures>", "<mes:Structures><str:Concepts/>"),
}


@pytest.mark.parametrize("case", sorted(PLAIN))
def test_plain_codelists_are_read_as_sdmx1_reads_them(tmp_path: Path, case: str) -> None:
    path = variant(tmp_path, *PLAIN[case]) if case != "example" else EXAMPLE
    plain = read_plain_codelists(path)
    assert plain is not None
    assert plain == by_sdmx1(path) == load_codelists(path)
    assert sum(map(len, plain.values())) >= 30  # every code of the example


@pytest.mark.parametrize("case", sorted(UNUSUAL))
def test_anything_unusual_is_left_to_sdmx1(tmp_path: Path, case: str) -> None:
    path = variant(tmp_path, *UNUSUAL[case])
    assert read_plain_codelists(path) is None
    assert load_codelists(path) == by_sdmx1(path)


def test_a_file_that_is_not_sdmx_is_reported_by_sdmx1(tmp_path: Path) -> None:
    from queryeval.errors import InputError

    path = tmp_path / "codelists.xml"
    path.write_text("<root/>", encoding="utf-8")
    assert read_plain_codelists(path) is None
    with pytest.raises(InputError):
        load_codelists(path)
    assert read_plain_codelists(tmp_path / "missing.xml") is None
