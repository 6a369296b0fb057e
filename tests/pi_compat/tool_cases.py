"""The differential case table: Pi 0.85.0's tools and ours on identical temp trees.

Each case names a tool, its arguments (as the model would send them) and the tree its cwd is
built from; every case gets its own freshly built cwd, so mutating cases never see each
other. ``compare`` says how results are compared where Pi itself is not deterministic:
``exact`` (default), ``unordered`` (ripgrep's and fd's parallel walks print files in no fixed
order: the lines are compared as a sorted list), ``limited`` (which N of many results a limit
keeps depends on that order: the count and the notice are compared). ``known`` names the entry
of ``docs/pi-compat.md`` that explains a deliberate difference; such a case must differ
exactly in the documented way (see the test).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

IMAGES = Path(__file__).resolve().parents[1] / "fixtures" / "images"
Tree = Mapping[str, Any]
"""relative path -> str | bytes | ("symlink", target) | ("dir",) | ("sparse", size) | ("image", name)."""


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def build_tree(root: Path, tree: Tree) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel, spec in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(spec, str):
            path.write_bytes(spec.encode("utf-8"))
        elif isinstance(spec, bytes):
            path.write_bytes(spec)
        elif spec[0] == "dir":
            path.mkdir(parents=True, exist_ok=True)
        elif spec[0] == "symlink":
            os.symlink(spec[1], path)
        elif spec[0] == "sparse":
            with open(path, "wb") as handle:
                handle.truncate(spec[1])
        elif spec[0] == "image":
            path.write_bytes((IMAGES / spec[1]).read_bytes())
        else:  # pragma: no cover - a typo in the table
            raise ValueError(f"unknown tree entry {spec!r}")


NUMBERED = "".join(f"line {i}\n" for i in range(1, 3001))
WIDE = "".join(f"{i:05d} " + "x" * 60 + "\n" for i in range(1, 1500))  # > 50 KB before 2000 lines

TEXT_TREE: Tree = {
    "a.txt": "alpha\nbeta\ngamma\ndelta\n",
    "noeol.txt": "one\ntwo\nthree",
    "unicode.txt": "héllo wörld\n日本語のテキスト\n🎉 emoji 🎉\nΣίσυφος\n",
    "crlf.txt": "first\r\nsecond\r\nthird\r\n",
    "bom.txt": "\ufeffwith bom\nsecond line\n",
    "empty.txt": "",
    "numbered.txt": NUMBERED,
    "wide.txt": WIDE,
    "longline.txt": "y" * 60_000 + "\nshort after\n",
    "midlong.txt": "short\n" + "z" * 52_000 + "\nend\n",
    "invalid.txt": b"ok \xff\xfe bad \xc3\x28 and \xed\xa0\x80 end\n",
    "binary.bin": bytes(range(256)) * 4,
    "dir/inner.txt": "inside\n",
    "emptydir": ("dir",),
    "link.txt": ("symlink", "a.txt"),
    "dangling": ("symlink", "nowhere.txt"),
    "loop1": ("symlink", "loop2"),
    "loop2": ("symlink", "loop1"),
    "huge.bin": ("sparse", 5 * 1024**3),
    "img/small.png": png(4, 3),
    "img/python.png": ("image", "python.png"),
    "img/python.jpg": ("image", "python.jpg"),
    "img/python.gif": ("image", "python.gif"),
    "img/python.webp": ("image", "python.webp"),
    "img/python.bmp": ("image", "python.bmp"),
    "img/wide.png": png(2100, 2),
    "img/fake.png": b"\x89PNG\r\n\x1a\nnot really",
    "home/notes.md": "from home\n",
    "with space.txt": "spaced\n",
}

PROJECT_TREE: Tree = {
    ".git": ("dir",),
    ".gitignore": "build/\n*.log\n!keep.log\nsecret.txt\n",
    "README.md": "# Project\nTODO: write docs\n",
    "README.MD.bak": "backup\n",
    "src/main.py": "import os\n\ndef main():\n    print('hello world')  # TODO\n    return os.getcwd()\n",
    "src/util.py": "def helper(x):\n    return x * 2\n\n\ndef Hello():\n    return 'Hello'\n",
    "src/app.ts": "export const hello = () => 'hello';\n",
    "src/app.spec.ts": "test('hello', () => {});\n",
    "src/nested/deep.py": "DEEP = 'hello deep'\n",
    "src/nested/.gitignore": "ignored_here.py\n",
    "src/nested/ignored_here.py": "hello ignored\n",
    "src/data.json": '{"hello": 1}\n',
    "build/out.py": "hello from build\n",
    "debug.log": "hello log\n",
    "keep.log": "hello keep\n",
    "secret.txt": "hello secret\n",
    ".hidden/h.py": "hello hidden\n",
    ".env": "HELLO=1\n",
    "crlf.py": "a = 1\r\nhello = 2\r\n",
    "unicode.py": "naïve = 'hello ünïcode'\n",
    "long.py": "hello = '" + "q" * 700 + "'\n",
    "docs/a.md": "hello a\n",
    "docs/b.md": "hello b\n",
    "docs/c.MD": "hello c\n",
    ".ignore": "docs/b.md\n",
    "bin.dat": b"hello\x00binary\x00",
    "link_to_src": ("symlink", "src"),
    "Makefile": "all:\n\techo hello\n",
}

LS_TREE: Tree = {
    "b.txt": "b",
    "A.txt": "a",
    "a.txt": "a",
    "_under.txt": "u",
    "10.txt": "t",
    "9.txt": "n",
    ".dot": "d",
    "Zeta": ("dir",),
    "alpha": ("dir",),
    "ä-umlaut.txt": "u",
    "e.txt": "e",
    "é.txt": "e",
    "a-b.txt": "x",
    "a_b.txt": "x",
    "ab.txt": "x",
    "link_dir": ("symlink", "alpha"),
    "dangling": ("symlink", "missing"),
    "file.txt": "f",
    "empty": ("dir",),
}

EDIT_TREE: Tree = {
    "code.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "dup.txt": "same\nother\nsame\n",
    "crlf.txt": "one\r\ntwo\r\nthree\r\n",
    "bom.txt": "\ufeffheader\nbody\n",
    "mixed.txt": "a\r\nb\nc\r\n",
    "quotes.txt": "say \u201chello\u201d and it\u2019s fine   \nnext\n",
    "unicode.txt": "größe = 1\nnamé = 2\n",
    "long.txt": "".join(f"row {i}\n" for i in range(1, 61)),
    "noeol.txt": "last line without newline",
    "dir": ("dir",),
    "empty.txt": "",
}

WRITE_TREE: Tree = {"existing.txt": "old content\n", "adir": ("dir",), "afile": "i am a file\n"}
BASH_TREE: Tree = {"marker.txt": "here\n"}
TREES: dict[str, Tree] = {"text": TEXT_TREE, "project": PROJECT_TREE, "ls": LS_TREE, "edit": EDIT_TREE,
                          "write": WRITE_TREE, "bash": BASH_TREE}


@attrs.frozen
class Case:
    id: str
    tool: str
    tree: str
    args: Mapping[str, Any]
    snapshot: tuple[str, ...] = ()
    abort_after_ms: int | None = None
    compare: str = "exact"
    known: str | None = None
    needs: str | None = None  # "fd": the oracle needs fd; "non-root": permission cases

    def to_json(self, cwd: str) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "tool": self.tool, "cwd": cwd, "args": dict(self.args),
                               "snapshot": list(self.snapshot)}
        if self.abort_after_ms is not None:
            out["abortAfterMs"] = self.abort_after_ms
        return out


def _read(case_id: str, args: Mapping[str, Any], **kw: Any) -> Case:
    return Case(f"read-{case_id}", "read", "text", args, **kw)


def _edit(case_id: str, args: Mapping[str, Any], **kw: Any) -> Case:
    path = args.get("path")
    snapshot = (path,) if isinstance(path, str) and not path.startswith("/") else ()
    return Case(f"edit-{case_id}", "edit", "edit", args, snapshot=snapshot, **kw)


def _write(case_id: str, args: Mapping[str, Any], snapshot: tuple[str, ...], **kw: Any) -> Case:
    return Case(f"write-{case_id}", "write", "write", args, snapshot=snapshot, **kw)


def _bash(case_id: str, args: Mapping[str, Any], **kw: Any) -> Case:
    return Case(f"bash-{case_id}", "bash", "bash", args, **kw)


def _grep(case_id: str, args: Mapping[str, Any], **kw: Any) -> Case:
    kw.setdefault("compare", "unordered")
    return Case(f"grep-{case_id}", "grep", "project", args, **kw)


def _find(case_id: str, args: Mapping[str, Any], **kw: Any) -> Case:
    kw.setdefault("compare", "unordered")
    return Case(f"find-{case_id}", "find", "project", args, needs="fd", **kw)


def _ls(case_id: str, args: Mapping[str, Any], **kw: Any) -> Case:
    return Case(f"ls-{case_id}", "ls", "ls", args, **kw)


E = "edits"
CASES: list[Case] = [
    # -- read ------------------------------------------------------------------------------
    _read("plain", {"path": "a.txt"}),
    _read("offset", {"path": "a.txt", "offset": 2}),
    _read("offset-limit", {"path": "a.txt", "offset": 2, "limit": 2}),
    _read("limit-zero", {"path": "a.txt", "limit": 0}),
    _read("limit-beyond", {"path": "a.txt", "limit": 100}),
    _read("offset-last", {"path": "a.txt", "offset": 5}),
    _read("offset-beyond", {"path": "a.txt", "offset": 6}),
    _read("offset-zero", {"path": "a.txt", "offset": 0}),
    _read("offset-negative", {"path": "a.txt", "offset": -3}),
    _read("offset-string", {"path": "a.txt", "offset": "3", "limit": "1"}),
    _read("offset-not-number", {"path": "a.txt", "offset": "three"}),
    _read("no-eol", {"path": "noeol.txt"}),
    _read("no-eol-limit", {"path": "noeol.txt", "limit": 2}),
    _read("unicode", {"path": "unicode.txt"}),
    _read("unicode-offset", {"path": "unicode.txt", "offset": 3, "limit": 1}),
    _read("crlf", {"path": "crlf.txt"}),
    _read("bom", {"path": "bom.txt"}),
    _read("empty", {"path": "empty.txt"}),
    _read("empty-offset", {"path": "empty.txt", "offset": 2}),
    _read("line-limit", {"path": "numbered.txt"}),
    _read("line-limit-offset", {"path": "numbered.txt", "offset": 1500}),
    _read("line-limit-tail", {"path": "numbered.txt", "offset": 2990, "limit": 5}),
    _read("byte-limit", {"path": "wide.txt"}),
    _read("byte-limit-offset", {"path": "wide.txt", "offset": 700, "limit": 1000}),
    _read("long-first-line", {"path": "longline.txt"}),
    _read("long-line-after-offset", {"path": "longline.txt", "offset": 2}),
    _read("long-line-in-middle", {"path": "midlong.txt"}),
    _read("long-line-at-offset", {"path": "midlong.txt", "offset": 2}),
    _read("invalid-utf8", {"path": "invalid.txt"}),
    _read("binary", {"path": "binary.bin"}),
    _read("missing", {"path": "nope.txt"}),
    _read("missing-dir", {"path": "nodir/nope.txt"}),
    _read("directory", {"path": "dir"}),
    _read("symlink", {"path": "link.txt"}),
    _read("dangling-symlink", {"path": "dangling"}),
    _read("symlink-loop", {"path": "loop1"}),
    _read("five-gigabytes", {"path": "huge.bin"}),
    _read("at-prefix", {"path": "@a.txt"}),
    _read("nbsp-path", {"path": "with\u00a0space.txt"}),
    _read("nested", {"path": "dir/inner.txt"}),
    _read("tilde", {"path": "~/notes.md"}),
    _read("tilde-alone", {"path": "~"}),
    _read("file-url-missing", {"path": "file:///definitely/missing.txt"}),
    _read("dotdot", {"path": "dir/../a.txt"}),
    _read("no-path", {}),
    _read("no-path-bad-offset", {"offset": "x", "limit": True}),
    _read("path-number", {"path": 5}),
    _read("png", {"path": "img/small.png"}),
    _read("png-real", {"path": "img/python.png"}),
    _read("jpeg", {"path": "img/python.jpg"}),
    _read("gif", {"path": "img/python.gif"}),
    _read("webp", {"path": "img/python.webp"}),
    _read("bmp", {"path": "img/python.bmp"}, known="read-image-codec"),
    _read("png-too-wide", {"path": "img/wide.png"}, known="read-image-codec"),
    _read("png-broken", {"path": "img/fake.png"}),
    # -- edit ------------------------------------------------------------------------------
    _edit("single", {"path": "code.py", E: [{"oldText": "return a + b", "newText": "return b + a"}]}),
    _edit("two", {"path": "code.py", E: [{"oldText": "a + b", "newText": "a+b"},
                                          {"oldText": "a - b", "newText": "a-b"}]}),
    _edit("not-found", {"path": "code.py", E: [{"oldText": "nothing like this", "newText": "x"}]}),
    _edit("not-found-second", {"path": "code.py", E: [{"oldText": "a + b", "newText": "x"},
                                                        {"oldText": "missing", "newText": "y"}]}),
    _edit("ambiguous", {"path": "dup.txt", E: [{"oldText": "same", "newText": "x"}]}),
    _edit("ambiguous-second", {"path": "dup.txt", E: [{"oldText": "other", "newText": "x"},
                                                        {"oldText": "same", "newText": "y"}]}),
    _edit("overlap", {"path": "code.py", E: [{"oldText": "def add(a, b)", "newText": "x"},
                                               {"oldText": "add(a, b):\n    return", "newText": "y"}]}),
    _edit("empty-old", {"path": "code.py", E: [{"oldText": "", "newText": "x"}]}),
    _edit("empty-old-second", {"path": "code.py", E: [{"oldText": "add", "newText": "plus"},
                                                        {"oldText": "", "newText": "x"}]}),
    _edit("no-change", {"path": "code.py", E: [{"oldText": "a + b", "newText": "a + b"}]}),
    _edit("crlf", {"path": "crlf.txt", E: [{"oldText": "two\nthree", "newText": "2\n3\n4"}]}),
    _edit("crlf-given-crlf", {"path": "crlf.txt", E: [{"oldText": "one\r\ntwo", "newText": "uno\r\ndos"}]}),
    _edit("bom", {"path": "bom.txt", E: [{"oldText": "body", "newText": "BODY"}]}),
    _edit("mixed-endings", {"path": "mixed.txt", E: [{"oldText": "b", "newText": "B"}]}),
    _edit("fuzzy-quotes", {"path": "quotes.txt", E: [{"oldText": 'say "hello" and it\'s fine', "newText": "said"}]}),
    _edit("fuzzy-trailing-space", {"path": "quotes.txt", E: [{"oldText": "fine\nnext", "newText": "ok\nafter"}]}),
    _edit("unicode", {"path": "unicode.txt", E: [{"oldText": "größe", "newText": "size"}]}),
    _edit("middle-of-long", {"path": "long.txt", E: [{"oldText": "row 30\n", "newText": "row thirty\n"}]}),
    _edit("far-apart", {"path": "long.txt", E: [{"oldText": "row 2\n", "newText": "row two\n"},
                                                  {"oldText": "row 58\n", "newText": "row fifty-eight\n"}]}),
    _edit("delete-lines", {"path": "long.txt", E: [{"oldText": "row 10\nrow 11\nrow 12\n", "newText": ""}]}),
    _edit("insert-at-start", {"path": "long.txt", E: [{"oldText": "row 1\n", "newText": "header\nrow 1\n"}]}),
    _edit("no-eol", {"path": "noeol.txt", E: [{"oldText": "without", "newText": "with"}]}),
    _edit("add-trailing-newline", {"path": "noeol.txt", E: [{"oldText": "newline", "newText": "newline\n"}]}),
    _edit("missing-file", {"path": "nope.py", E: [{"oldText": "a", "newText": "b"}]}),
    _edit("directory", {"path": "dir", E: [{"oldText": "a", "newText": "b"}]}),
    _edit("empty-file", {"path": "empty.txt", E: [{"oldText": "a", "newText": "b"}]}),
    _edit("edits-as-json-string", {"path": "code.py", E: '[{"oldText": "a - b", "newText": "b - a"}]'}),
    _edit("edits-single-object", {"path": "code.py", E: {"oldText": "a - b", "newText": "b - a"}}),
    _edit("legacy-old-new", {"path": "code.py", "oldText": "def sub", "newText": "def minus"}),
    _edit("edits-empty", {"path": "code.py", E: []}),
    _edit("edit-missing-new", {"path": "code.py", E: [{"oldText": "a"}]}),
    _edit("no-edits", {"path": "code.py"}),
    # -- write -----------------------------------------------------------------------------
    _write("new", {"path": "new.txt", "content": "fresh\n"}, ("new.txt",)),
    _write("overwrite", {"path": "existing.txt", "content": "replaced"}, ("existing.txt",)),
    _write("nested-dirs", {"path": "a/b/c/deep.txt", "content": "deep\n"}, ("a/b/c/deep.txt",)),
    _write("unicode", {"path": "ü/名前.txt", "content": "日本語 ✓\n"}, ("ü/名前.txt",)),
    _write("empty", {"path": "empty.txt", "content": ""}, ("empty.txt",)),
    _write("crlf", {"path": "crlf.txt", "content": "a\r\nb\r\n"}, ("crlf.txt",)),
    _write("into-directory", {"path": "adir", "content": "x"}, ()),
    _write("parent-is-file", {"path": "afile/child.txt", "content": "x"}, ("afile",)),
    _write("dotdot", {"path": "adir/../up.txt", "content": "up\n"}, ("up.txt",)),
    _write("no-content", {"path": "x.txt"}, ("x.txt",)),
    _write("content-number", {"path": "n.txt", "content": 42}, ("n.txt",)),
    # -- bash ------------------------------------------------------------------------------
    _bash("echo", {"command": "echo hello"}),
    _bash("no-output", {"command": "true"}),
    _bash("exit-code", {"command": "exit 3"}),
    _bash("exit-with-output", {"command": "echo partial; exit 7"}),
    _bash("stderr", {"command": "echo to-err >&2"}),
    _bash("stderr-and-exit", {"command": "echo oops >&2; false"}),
    _bash("pwd", {"command": "pwd"}),
    _bash("relative-file", {"command": "cat marker.txt"}),
    _bash("signal-term", {"command": "echo before; kill -TERM $$"}),
    _bash("signal-kill", {"command": "kill -9 $$"}),
    _bash("many-lines", {"command": "seq 1 5000"}),
    _bash("exact-2000", {"command": "seq 1 2000"}),
    _bash("big-bytes", {"command": "for i in $(seq 1 800); do printf '%0100d\\n' $i; done"}),
    _bash("long-single-line", {"command": "head -c 60000 /dev/zero | tr '\\0' 'w'"}),
    _bash("long-line-then-exit", {"command": "head -c 60000 /dev/zero | tr '\\0' 'w'; exit 2"}),
    _bash("invalid-utf8", {"command": "printf 'ok \\377\\376 bad \\303\\050 end\\n'"}),
    _bash("bom-output", {"command": "printf '\\357\\273\\277bom first\\n'"}),
    _bash("unicode", {"command": "echo 'héllo 日本 🎉'"}),
    _bash("crlf-output", {"command": "printf 'a\\r\\nb\\r\\n'"}),
    _bash("stdin-is-empty", {"command": "cat; echo done"}),
    _bash("timeout", {"command": "echo started; sleep 5", "timeout": 0.5}),
    _bash("timeout-fractional", {"command": "sleep 3", "timeout": 0.25}),
    _bash("timeout-invalid", {"command": "echo x", "timeout": -1}),
    _bash("timeout-too-big", {"command": "echo x", "timeout": 3_000_000}),
    _bash("timeout-not-hit", {"command": "echo fast", "timeout": 10}),
    _bash("env-no-session-vars", {"command": "env | grep -c '^PI_SESSION' || true"}),
    _bash("path-has-agent-bin", {"command": "echo \"$PATH\" | cut -d: -f1 | sed 's#.*/##'"}),
    _bash("background-child", {"command": "(sleep 2; echo late) & echo now"}),
    _bash("abort", {"command": "echo start; sleep 5; echo never"}, abort_after_ms=400),
    _bash("abort-no-output", {"command": "sleep 5"}, abort_after_ms=300),
    _bash("no-command", {}),
    # -- grep ------------------------------------------------------------------------------
    _grep("literal", {"pattern": "hello", "literal": True}),
    _grep("regex", {"pattern": "def \\w+\\(", "path": "src"}),
    _grep("invalid-regex", {"pattern": "foo(bar"}),
    _grep("ignore-case", {"pattern": "HELLO", "ignoreCase": True, "path": "src"}),
    _grep("case-sensitive", {"pattern": "Hello", "path": "src"}),
    _grep("literal-metachars", {"pattern": "x * 2", "literal": True}),
    _grep("glob", {"pattern": "hello", "glob": "*.py"}),
    _grep("glob-deep", {"pattern": "hello", "glob": "**/nested/*.py"}),
    _grep("context", {"pattern": "print", "path": "src/main.py", "context": 1}),
    _grep("context-edges", {"pattern": "import", "path": "src/main.py", "context": 3}),
    _grep("limit", {"pattern": "hello", "limit": 2}, compare="limited"),
    _grep("limit-zero", {"pattern": "hello", "limit": 0}, compare="limited"),
    _grep("long-line", {"pattern": "hello", "path": "long.py"}),
    _grep("no-match", {"pattern": "zzz_not_there"}),
    _grep("file-path", {"pattern": "helper", "path": "src/util.py"}),
    _grep("missing-path", {"pattern": "x", "path": "nowhere"}),
    _grep("gitignore", {"pattern": "hello", "path": "."}),
    _grep("hidden", {"pattern": "hello", "path": ".hidden"}),
    _grep("crlf", {"pattern": "hello", "path": "crlf.py"}),
    _grep("unicode", {"pattern": "ünïcode"}),
    _grep("binary", {"pattern": "binary"}),
    _grep("no-pattern", {}),
    # -- find ------------------------------------------------------------------------------
    _find("py", {"pattern": "*.py"}),
    _find("json-deep", {"pattern": "**/*.json"}),
    _find("path-pattern", {"pattern": "src/**/*.spec.ts"}),
    _find("path-pattern-anchored", {"pattern": "**/nested/*.py"}),
    _find("no-match", {"pattern": "*.nothing"}),
    _find("limit", {"pattern": "*", "limit": 3}, compare="limited"),
    _find("directory-name", {"pattern": "nested"}),
    _find("smart-case-lower", {"pattern": "*.md"}),
    _find("smart-case-upper", {"pattern": "*.MD"}),
    _find("alternation", {"pattern": "*.{ts,json}"}),
    _find("class", {"pattern": "[ab].md"}),
    _find("question-mark", {"pattern": "?.md"}),
    _find("hidden", {"pattern": ".*"}),
    _find("ignored-log", {"pattern": "*.log"}),
    _find("subdir", {"pattern": "*.py", "path": "src"}),
    _find("subdir-nested-ignore", {"pattern": "*", "path": "src/nested"}),
    _find("missing-path", {"pattern": "*", "path": "nowhere"}),
    _find("file-path", {"pattern": "*", "path": "README.md"}),
    _find("symlink", {"pattern": "link_*"}),
    _find("star", {"pattern": "*"}),
    _find("double-star", {"pattern": "**"}),
    _find("no-pattern", {}),
    # -- ls --------------------------------------------------------------------------------
    _ls("cwd", {}),
    _ls("dot", {"path": "."}),
    _ls("limit", {"limit": 3}),
    _ls("limit-exact", {"limit": 19}),
    _ls("empty-dir", {"path": "empty"}),
    _ls("subdir", {"path": "alpha"}),
    _ls("missing", {"path": "nope"}),
    _ls("file", {"path": "file.txt"}),
    _ls("symlink-dir", {"path": "link_dir"}),
    _ls("limit-string", {"limit": "2"}),
    _ls("absolute-missing", {"path": "/definitely/not/here"}),
]

BUILDERS: dict[str, Callable[[Path], None]] = {name: (lambda root, t=tree: build_tree(root, t))
                                               for name, tree in TREES.items()}
