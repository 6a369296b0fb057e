"""Frontmatter read like Pi 0.85.0 reads it: the same texts through Pi's own ``parseFrontmatter``
(run by the oracle) and through ours must give the same mapping and body — or both refuse the
YAML. Hand-written cases of what skill and template authors write, plus seeded random documents
(300 per run; 3,000 with ``RPCD_LONG=1``). The one deliberate difference: complex keys
(``? key``) are refused here (docs/pi-compat.md)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from rpcd.runtime.resources.frontmatter import FrontmatterError, parse_frontmatter
from tests.pi_compat.frontmatter_corpus import CASES, DOCUMENT_EDGES, random_documents, wrap
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_text import js_like, pi_frontmatter

RANDOM_COUNT = 3000 if os.environ.get("RPCD_LONG") == "1" else 300


def ours(text: str) -> dict[str, Any]:
    try:
        parsed = parse_frontmatter(text)
    except FrontmatterError as exc:
        return {"error": str(exc)}
    return {"frontmatter": js_like(parsed.data), "body": parsed.body}


def comparable(pi: dict[str, Any]) -> dict[str, Any]:
    """Pi's answer as far as skills and templates can see it: a frontmatter that is not a mapping
    (a bare string or list) has none of their keys, which is what our ``{}`` says."""
    if "error" in pi:
        return {"error": True}
    frontmatter = pi["frontmatter"] if isinstance(pi["frontmatter"], dict) else {}
    return {"frontmatter": frontmatter, "body": pi["body"]}


def mismatches(pi_oracle: PiOracle, texts: list[str]) -> list[str]:
    out = []
    for text, theirs in zip(texts, pi_frontmatter(pi_oracle, texts), strict=True):
        mine = ours(text)
        expected = comparable(theirs)
        got = {"error": True} if "error" in mine else mine
        if got != expected:
            out.append(f"{text!r}\n  pi:   {theirs}\n  ours: {mine}")
    return out


def test_hand_written_frontmatter_reads_as_pi_reads_it(pi_oracle: PiOracle) -> None:
    texts = [wrap(case) for case in CASES] + DOCUMENT_EDGES
    assert mismatches(pi_oracle, texts) == []


@pytest.mark.parametrize("seed", [1, 2])
def test_random_frontmatter_reads_as_pi_reads_it(pi_oracle: PiOracle, seed: int) -> None:
    assert mismatches(pi_oracle, random_documents(seed, RANDOM_COUNT // 2)) == []


def test_complex_keys_are_refused_where_pi_reads_them(pi_oracle: PiOracle) -> None:
    text = wrap("? complex\n: value")
    (theirs,) = pi_frontmatter(pi_oracle, [text])
    assert theirs["frontmatter"] == {"complex": "value"}
    assert "error" in ours(text)
