"""Frontmatter inputs for the differential test: hand-written cases of what Pi users write (and
get wrong), and a seeded generator of random documents built from the same pieces."""

from __future__ import annotations

import random

CASES = [
    "name: a\ndescription: b",
    "description: Use when: the user asks",
    "description: 'It''s: fine'",
    'description: "esc \\n \\t \\u00e9 \\x41"',
    "description: foo # comment\nname: x",
    "description: foo#bar",
    "description: line one\n  line two\n\n  line three",
    "description: |\n  a\n   b\n\n  c\n",
    "description: |\n  a\n  b",
    "description: |-\n  a\n  b\n\n",
    "description: |+\n  a\n  b\n\n",
    "description: >\n  folded\n  text\n\n  para\n    more\n  back",
    "description: >-\n  x\n  y",
    "description: |2\n   indented\n  base",
    "description: >\n\n  leading blank\n",
    "tags: [a, b, 'c d', {e: f}]",
    "meta: {a: 1, b: [x, y], c: \"q\"}",
    "list:\n- a\n- b: c\n  d: e\n-\n  - nested",
    "list:\n  - a\n  - b",
    "metadata:\n  author: me\n  version: 1.0\n  n: 0x1F\n  o: 0o17\n  f: .inf\n  g: -.Inf\n  h: .nan\n  i: 1e3\n"
    "  j: ~\n  k: Null\n  l: TRUE\n  m: yes\n  p: 012\n  q: +12",
    "disable-model-invocation: true",
    "disable-model-invocation: True",
    "disable-model-invocation: yes",
    "a: 1\na: 2",
    "\tname: x",
    "name: x\n\tdescription: y",
    "description: \"unterminated",
    "description: 'multi\n  line\n\n  quoted'",
    "description: \"multi \\\n  escaped\"",
    "name: &a x\nother: *a",
    "name: !tag x",
    "name: `x`",
    "name: @x",
    "just a string",
    "- a\n- b",
    "",
    "   ",
    "# only comment",
    "name: x\n  bad: indent",
    "name:\n  nested: map",
    "name: x\n...\nignored: y",
    "description: a: b",
    "description: a:b",
    "description: http://example.com",
    "description: [unterminated",
    "k: v # c\n# comment line\nk2: v2",
    "description:   spaced   value   ",
    "a:\nb: 2",
    'argument-hint: "<PR-URL>"',
    "argument-hint: <file> [focus]",
    "argument-hint: [optional]",
    "description: -dash start",
    "description: - dash space",
    "description: x\n  - continued",
    "description: x\n  y: z",
    '"quoted key": v',
    "'single key': v",
    "1: one\ntrue: t\nnull: n",
    "description: 'a' trailing",
    'description: "a" # ok',
    "x: { a: b,\n  c: d }",
    "x: [a,\n  b]",
    "description: café ünïcode ✓ 😀",
    "description: %x",
    "description: a #b\n  c",
    "emptyval:\nnext: 1",
    "seq:\n  -\n  - b",
    "x: |\n\n  a\n",
    "x: |\n   \n  a",
    "x: >+\n  a\n\n",
    "x: 'a''b'",
    'x: "\\"q\\""',
    'x: "\\z"',
    'x: "\\u00"',
    "name: x   \ndescription: y   ",
    "x: a\n\n\ny: b",
    "name: pdf-tools\ndescription: Extracts text and tables from PDF files, fills PDF forms, and merges multiple PDFs."
    " Use when working with PDF documents.\nlicense: Apache-2.0\nallowed-tools: Bash(git:*) Read\nmetadata:\n"
    "  author: example-org\n  version: \"1.0\"",
]


def wrap(yaml: str) -> str:
    return "---\n" + yaml + "\n---\nBody text\n\n"


DOCUMENT_EDGES = [
    "no frontmatter\nat all",
    "---\nunclosed",
    "\ufeff---\r\nname: crlf\r\n---\r\n body \r\n",
    "---\n---\nempty fm",
    "---x\nname: y\n---\nb",
    "---\nname: a\n---more\nbody",
    "---\ndescription: one\n---\n---\nsecond block stays in the body\n",
]

_ATOMS = ["foo", "Use when", "a:b", "a: b", "x #c", "x#c", "-x", "- x", "'q'", '"d"', "it's", "1", "1.5", "true",
          "null", "~", "0x1f", "[a]", "{a: b}", "café", "tab\there", "end:", "http://x.y/z", "@at", "`tick`", "%p",
          "!t", "&a", "*a", ">", "|", "", " ", "a  b", "yes", "NO", ".5", "1e3", "-", "#"]
_KEYS = ["name", "description", "argument-hint", "disable-model-invocation", "license", "metadata", "allowed-tools",
         "x"]


def _plain(rng: random.Random) -> str:
    return " ".join(rng.choice(_ATOMS) for _ in range(rng.randint(1, 3)))


def _value(rng: random.Random, indent: int) -> str:
    kind = rng.randint(0, 9)
    pad = " " * (indent + rng.choice([1, 2, 2, 4]))
    if kind <= 3:
        text = _plain(rng)
        if rng.random() < 0.3:
            text += "\n" + "\n".join(pad + _plain(rng) for _ in range(rng.randint(1, 2)))
            if rng.random() < 0.3:
                text += "\n\n" + pad + _plain(rng)
        return " " + text
    if kind == 4:
        quote = rng.choice(["'", '"'])
        inner = _plain(rng).replace(quote, quote + quote if quote == "'" else "\\" + quote)
        if rng.random() < 0.3:
            inner += "\n" + pad + _plain(rng).replace(quote, "")
        if quote == '"' and rng.random() < 0.3:
            inner += rng.choice(["\\n", "\\t", "\\u00e9", "\\x41", "\\\\", "\\q"])
        return " " + quote + inner + quote + rng.choice(["", " # c", " tail"])
    if kind == 5:
        header = rng.choice(["|", ">", "|-", ">-", "|+", ">+", "|2", ">1-"])
        lines = []
        for _ in range(rng.randint(0, 4)):
            roll = rng.random()
            if roll < 0.2:
                lines.append("")
            elif roll < 0.35:
                lines.append(pad + "  " + _plain(rng))
            else:
                lines.append(pad + _plain(rng))
        return " " + header + ("\n" + "\n".join(lines) if lines else "")
    if kind == 6:
        items = ", ".join(rng.choice(["a", "'b c'", '"d"', "1", "{k: v}", "[x]", "e f"])
                          for _ in range(rng.randint(0, 3)))
        return " [" + items + "]"
    if kind == 7:
        return "\n" + "\n".join(pad + "- " + _plain(rng) for _ in range(rng.randint(1, 3)))
    if kind == 8:
        return "\n" + "\n".join(pad + rng.choice(["k", "name", "x y", "k2"]) + ":" + _value(rng, len(pad))
                                for _ in range(rng.randint(1, 2)))
    return ""


def random_documents(seed: int, count: int) -> list[str]:
    """Random frontmatter blocks (keys of skills and templates, values of every shape above).
    Complex keys (``? key``) are left out: rpcd refuses them on purpose (docs/pi-compat.md)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        lines = []
        for key in rng.sample(_KEYS, rng.randint(1, 4)):
            if rng.random() < 0.15:
                lines.append(rng.choice(["", "# comment", "  # indented comment"]))
            lines.append(key + ":" + _value(rng, 0))
        out.append("---\n" + "\n".join(lines) + "\n---\nbody")
    return out
