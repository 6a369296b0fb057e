"""Prompt templates: Pi's argument rules, names, descriptions, hints and loading (the same
expansions are compared with Pi's own in ``tests/pi_compat/test_templates_against_pi.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rpcd.runtime.resources.discovery import Resource, SourceInfo
from rpcd.runtime.resources.prompt_templates import (
    PromptTemplate,
    expand_prompt_template,
    load_prompt_templates,
    parse_command_args,
    substitute_args,
)

from ..services._projects import write

INFO = SourceInfo("x", "auto", "project")


def template(name: str, content: str) -> PromptTemplate:
    return PromptTemplate(name=name, description="", content=content, file_path=f"/{name}.md", source_info=INFO)


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ('Button "click handler" x', ["Button", "click handler", "x"]),
        ("a  'b c'  d", ["a", "b c", "d"]),
        ('un"quo ted"x', ["unquo tedx"]),
        ("tab\tand\u00a0nbsp", ["tab", "and", "nbsp"]),
        ('"open quote', ["open quote"]),
        ("", []),
    ],
)
def test_arguments_split_like_a_shell_line(text: str, args: list[str]) -> None:
    assert parse_command_args(text) == args


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        ("$1 and $2", ["a", "b"], "a and b"),
        ("$3", ["a"], ""),
        ("$0|$10", ["a"], "|"),  # $0 is no argument (JS index -1); $10 the tenth
        ("$@ / $ARGUMENTS", ["a", "b"], "a b / a b"),
        ("${1:-seven}", [], "seven"),
        ("${1:-seven}", [""], "seven"),
        ("${@:-none}", [], "none"),
        ("${ARGUMENTS:-x}", ["a"], "a"),
        ("${@:2}", ["a", "b", "c"], "b c"),
        ("${@:0}", ["a", "b"], "a b"),
        ("${@:2:1}", ["a", "b", "c"], "b"),
        ("$1", ["$2"], "$2"),  # never substituted twice
        ("cost: $5.00", [], "cost: .00"),
    ],
)
def test_substitution(content: str, args: list[str], expected: str) -> None:
    assert substitute_args(content, args) == expected


def test_only_known_templates_expand() -> None:
    templates = [template("review", "Review $1")]
    assert expand_prompt_template("/review a.py", templates) == "Review a.py"
    assert expand_prompt_template("/review", templates) == "Review "
    assert expand_prompt_template("/other a", templates) == "/other a"
    assert expand_prompt_template("review a", templates) == "review a"
    assert expand_prompt_template("/review\nmulti\nline", templates) == "Review multi"


def test_loading_names_descriptions_and_hints(tmp_path: Path) -> None:
    described = write(tmp_path / "review.md", '---\ndescription: Review code\nargument-hint: "<file>"\n---\nBody $1\n')
    long_line = "x" * 61
    plain = write(tmp_path / "plain.md", f"\n\n{long_line}\nrest\n")
    emoji = write(tmp_path / "emoji.md", "a" * 59 + "😀tail\n")
    broken = write(tmp_path / "broken.md", "---\ndescription: a: b\n---\nbody\n")
    templates, diagnostics = load_prompt_templates(
        [Resource(str(p), SourceInfo(str(p), "auto", "project")) for p in (described, plain, emoji, broken)]
    )
    assert diagnostics == []
    by_name = {t.name: t for t in templates}
    assert set(by_name) == {"review", "plain", "emoji"}  # the malformed one is skipped silently, as in Pi
    assert by_name["review"].description == "Review code"
    assert by_name["review"].argument_hint == "<file>"
    assert by_name["review"].content == "Body $1"
    assert by_name["plain"].description == "x" * 60 + "..."
    assert by_name["plain"].content == f"\n\n{long_line}\nrest\n"  # no frontmatter: the body as written
    assert by_name["emoji"].description == "a" * 59 + "\ud83d..."  # 60 UTF-16 units, as JavaScript slices


def test_first_template_of_a_name_wins(tmp_path: Path) -> None:
    first = write(tmp_path / "a" / "same.md", "first")
    second = write(tmp_path / "b" / "same.md", "second")
    templates, diagnostics = load_prompt_templates(
        [Resource(str(p), SourceInfo(str(p), "auto", "user")) for p in (first, second)]
    )
    assert [t.content for t in templates] == ["first"]
    assert len(diagnostics) == 1 and "collision" in diagnostics[0].message and str(second) in diagnostics[0].message
