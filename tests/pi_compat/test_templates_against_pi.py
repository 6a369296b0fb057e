"""Prompt-template expansion exactly as Pi 0.85.0 expands it: random templates full of
placeholders (``$1``, ``$10``, ``$0``, ``$@``, ``$ARGUMENTS``, ``${N:-default}``, ``${@:N}``,
``${@:N:L}`` and near misses) and random ``/name args`` lines (quotes, tabs, no-break spaces,
newlines, unterminated quotes, placeholders inside arguments) go through Pi's own
``expandPromptTemplate``/``parseCommandArgs`` and through ours. 400 lines per run, 4,000 with
``RPCD_LONG=1``."""

from __future__ import annotations

import os
import random

from rpcd.runtime.resources.discovery import SourceInfo
from rpcd.runtime.resources.prompt_templates import (
    PromptTemplate,
    expand_prompt_template,
    parse_command_args,
    split_command,
)
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_text import pi_expand

COUNT = 4000 if os.environ.get("RPCD_LONG") == "1" else 400
PLACEHOLDERS = ["$1", "$2", "$3", "$10", "$0", "$@", "$ARGUMENTS", "${1:-def}", "${2:-}", "${@:2}", "${@:0}",
                "${@:2:1}", "${@:1:0}", "${ARGUMENTS:-none}", "${@:-empty}", "$", "${", "}", "$$1", "${1:-a}b}",
                "$ARGUMENTSX", "${x}", "$-1", " text ", "\n", "é😀"]
ARGS = ["a", "bb", '"two words"', "'single q'", 'un"mixed q"x', "\t", "\u00a0", "\n", "  ", "$1", "${@}",
        '"unterminated', "'", "é", "😀", "-", '""', "x\u2028y"]
NAMES = ["review", "fix", "skill:x", "unknown"]


def templates() -> list[PromptTemplate]:
    rng = random.Random(7)
    out = []
    for name in NAMES[:3]:
        content = "".join(rng.choice(PLACEHOLDERS) for _ in range(12))
        out.append(PromptTemplate(name, "", content, f"/{name}.md", SourceInfo(f"/{name}.md", "auto", "user")))
    return out


def lines(count: int) -> list[str]:
    rng = random.Random(11)
    out = ["/review", "/review ", "review a", "/fix\ta b", "/fix\n", "/", "//x"]
    for _ in range(count):
        separator = rng.choice([" ", "  ", "\t", "\n", "\u00a0"])
        args = rng.choice([" ", ""]).join(rng.choice(ARGS) for _ in range(rng.randint(0, 5)))
        out.append(f"/{rng.choice(NAMES)}{separator}{args}")
    return out


def test_template_expansion_matches_pi(pi_oracle: PiOracle) -> None:
    known = templates()
    inputs = lines(COUNT)
    theirs = pi_expand(pi_oracle, [{"name": t.name, "content": t.content} for t in known], inputs)
    wrong = []
    for text, pi in zip(inputs, theirs, strict=True):
        expanded = expand_prompt_template(text, known)
        if expanded != pi["expanded"]:
            wrong.append(f"{text!r}: pi {pi['expanded']!r} ours {expanded!r}")
    assert wrong == []


def test_command_names_and_arguments_split_like_pi(pi_oracle: PiOracle) -> None:
    inputs = lines(COUNT // 4)
    theirs = pi_expand(pi_oracle, [], inputs)
    for text, pi in zip(inputs, theirs, strict=True):
        parts = split_command(text)
        ours = (None, None) if parts is None else (parts[0], parse_command_args(parts[1]))
        assert ours == (pi["name"], pi["args"]), text
