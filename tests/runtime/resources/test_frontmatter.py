"""The frontmatter reader: what prompt templates and skills are written with, read as Pi's
``parseFrontmatter`` (YAML 1.2 core schema) reads it; the same inputs are compared with Pi's own
reading in ``tests/pi_compat/test_frontmatter_against_pi.py``."""

from __future__ import annotations

import math

import pytest

from rpcd.runtime.resources.frontmatter import FrontmatterError, parse_frontmatter, parse_yaml


def fm(yaml: str) -> dict[str, object]:
    return parse_frontmatter(f"---\n{yaml}\n---\nbody\n").data


def test_body_is_trimmed_after_frontmatter_and_kept_whole_without_it() -> None:
    assert parse_frontmatter("---\nname: a\n---\n\n  body  \n\n").body == "body"
    assert parse_frontmatter("\nno frontmatter\n").body == "\nno frontmatter\n"
    assert parse_frontmatter("---\nunclosed\n").data == {}


def test_bom_and_crlf_are_normalized_before_reading() -> None:
    parsed = parse_frontmatter("\ufeff---\r\nname: crlf\r\n---\r\n body \r\n")
    assert parsed.data == {"name": "crlf"}
    assert parsed.body == "body"


def test_empty_frontmatter_is_an_empty_mapping() -> None:
    assert parse_frontmatter("---\n---\nbody").data == {}
    assert parse_frontmatter("---\n# only a comment\n---\nbody").data == {}


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("description: foo # comment", "foo"),
        ("description: foo#bar", "foo#bar"),
        ("description: 'It''s: fine'", "It's: fine"),
        ('description: "tab\\tand \\u00e9"', "tab\tand é"),
        ("description: line one\n  line two\n\n  line three", "line one line two\nline three"),
        ("description: |\n  a\n   b\n\n  c\n", "a\n b\n\nc\n"),
        ("description: |-\n  a\n  b\n\n", "a\nb"),
        ("description: >\n  folded\n  text\n\n  para", "folded text\npara\n"),
        ("description: http://example.com/x", "http://example.com/x"),
        ("description: a:b", "a:b"),
        ('argument-hint: "<PR-URL>"', "<PR-URL>"),
        ("argument-hint: <file> [focus]", "<file> [focus]"),
    ],
)
def test_scalars(yaml: str, expected: str) -> None:
    key = yaml.split(":", 1)[0]
    assert fm(yaml)[key] == expected


def test_core_schema_types() -> None:
    data = parse_yaml("a: true\nb: True\nc: yes\nd: ~\ne: 12\nf: 0x1F\ng: 0o17\nh: 1.5\ni: .inf\nj: null\nk: 012")
    assert data == {"a": True, "b": True, "c": "yes", "d": None, "e": 12, "f": 31, "g": 15, "h": 1.5,
                    "i": math.inf, "j": None, "k": 12}


def test_collections() -> None:
    assert fm("tags: [a, 'b c', {d: e}]") == {"tags": ["a", "b c", {"d": "e"}]}
    assert fm("list:\n- a\n- b: c\n  d: e") == {"list": ["a", {"b": "c", "d": "e"}]}
    assert fm("metadata:\n  author: me\n  version: 2") == {"metadata": {"author": "me", "version": 2}}
    assert fm("x: &a 1\ny: *a\nz: !tag 5") == {"x": 1, "y": 1, "z": "5"}


@pytest.mark.parametrize(
    "yaml",
    [
        "description: Use when: the user asks",  # the classic: a mapping inside a compact value
        "description: - dash",
        "a: 1\na: 2",
        "\tname: x",
        'description: "unterminated',
        "description: [unterminated",
        "name: x\n  bad: indent",
        "name: `x`",
        "description: \"\\q\"",
        "name: x\n...\nmore: y",
        "? complex\n: key",
    ],
)
def test_malformed_yaml_is_an_error(yaml: str) -> None:
    with pytest.raises(FrontmatterError):
        fm(yaml)


def test_top_level_non_mapping_reads_as_empty() -> None:
    assert fm("just a string") == {}
    assert fm("- a\n- b") == {}
