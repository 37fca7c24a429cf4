"""Unpaired UTF-16 surrogates: what a JSON escape such as `"\\ud800"` decodes to. Python
holds one in a `str`, but UTF-8 (files, tokenizers, endpoints, hashes) has no form for it.
One place finds them and one replaces them, for the scorers' rule, the embedder and the
run log alike."""

from __future__ import annotations


def unpaired_surrogate(text: str) -> int | None:
    """Where `text` holds a UTF-16 surrogate on its own (no character, not encodable as
    UTF-8), or None.

    >>> unpaired_surrogate("caf\\u00e9"), unpaired_surrogate("bad \\ud800 text")
    (None, 4)
    """
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return int(exc.start)
    return None


def readable(text: str) -> str:
    """`text` with every unpaired surrogate as U+FFFD (the text itself where it has none).

    >>> readable("bad \\udc00 text"), readable("café")
    ('bad \\ufffd text', 'café')
    """
    if unpaired_surrogate(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
