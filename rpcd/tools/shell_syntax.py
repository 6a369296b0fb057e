"""Reading a bash command line the way bash does, for approval rules — two readers, one strict, one
generous:

* :func:`simple_command_words` says "this is one simple command, and these are its words" only when
  that is certain: the text uses nothing but words made of plain characters, single quotes, double
  quotes without expansions, and backslash escapes, separated by blanks. Anything else — an
  operator (``; & | < > ( )``), a substitution or expansion (``$``, a backtick), ANSI-C or locale
  quoting (``$'…'``, ``$"…"``), brace expansion, a comment, a newline, a reserved word, an
  assignment, a control or bidirectional-override character — is "not provably one simple
  command", and an allow rule never covers it (it is asked every time). A property test runs bash
  itself over generated commands and checks every ``simple`` answer against what bash executes
  (``tests/tools/test_shell_syntax.py``).
* :func:`command_segments` finds the simple commands *inside* any command — after operators and
  newlines, inside ``$(…)``, backticks, ``<(…)``, here-document bodies that expand, ``bash -c``
  and ``eval`` strings, and behind wrappers (``sudo``, ``env``, ``xargs``, ``find -exec`` …) — with
  quotes removed the way bash removes them (``#`` starts a comment only at the start of a word,
  ``$'…'`` is decoded). It is what a reject rule is checked against: generous, so it errs towards
  finding a command that is not there. It is best effort by nature (``eval "$x"`` hides anything);
  that is why a command it cannot see through is never allowed by a rule, only asked about.

And one question about programs: :func:`runs_other_commands` says why a simple command may run code
or commands its words do not spell out (an interpreter, a wrapper, ``find -exec``, ``git -c`` or an
alias, ``tar --to-command`` …): such a command is never generalised into a rule, and no prefix rule
covers it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

_BLANKS: Final = " \t"
_WORD_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./,:+@")
"""Unquoted characters that are literal anywhere in a word (``%`` first is a job: ``%1`` is ``fg %1``)."""
_ARGUMENT_CHARS: Final = _WORD_CHARS | frozenset("%*?[]^!#=~")
"""Also literal (or only pathname/tilde-expanded: still words of the same command) after the first word;
``#`` and ``~`` have extra conditions (see :func:`_argument_ok`)."""
RESERVED_WORDS: Final = frozenset({
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function",
    "if", "in", "select", "then", "time", "until", "while",
})
MAX_SIMPLE_CHARS: Final = 1 << 16
_PLAIN_RUN: Final = re.compile(r"[A-Za-z0-9_\-./,:+@]+")
_INVISIBLE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
"""Control characters and Unicode marks that change how a command *looks*: never part of a simple command."""


# -- the strict reader -------------------------------------------------------------------------------


def simple_command_words(command: str) -> list[str] | None:
    """The words of ``command`` (quotes removed) when it is provably one simple command as bash reads
    it, else ``None``. Pathname patterns (``*.py``) and a leading ``~/`` stay as written: bash expands
    them into more or other *arguments* of the same command. A command longer than
    ``MAX_SIMPLE_CHARS`` is not read at all (asked every time)."""
    text = command.lstrip(" \t\n").rstrip("\n")  # (trailing blanks may be escaped: the loop skips the rest)
    if not text or len(text) > MAX_SIMPLE_CHARS or _INVISIBLE.search(text) or "\n" in text or "\r" in text:
        return None
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in _BLANKS:
            i += 1
            continue
        parsed = _word(text, i, first=not words)
        if parsed is None:
            return None
        word, i = parsed
        if i < n and text[i] not in _BLANKS:
            return None
        words.append(word)
    if not words or not words[0] or words[0] in RESERVED_WORDS or text.startswith("-"):
        return None  # ``bash -c -x…`` would read a leading ``-`` as its own options
    if words[0].startswith("%"):
        return None  # bash runs a command word starting with ``%`` (even quoted) as ``fg %…``
    return words


def _word(text: str, i: int, *, first: bool) -> tuple[str, int] | None:
    """One word from ``text[i]`` to the next blank: (its text after quote removal, where it ends)."""
    out: list[str] = []
    start, n = i, len(text)
    allowed = _WORD_CHARS if first else _ARGUMENT_CHARS
    while i < n and text[i] not in _BLANKS:
        char = text[i]
        if char == "\\":
            if i + 1 >= n:
                return None
            out.append(text[i + 1])
            i += 2
        elif char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return None
            out.append(text[i + 1 : end])
            i = end + 1
        elif char == '"':
            parsed = _double_quoted(text, i + 1)
            if parsed is None:
                return None
            chunk, i = parsed
            out.append(chunk)
        elif char in allowed:
            run = _PLAIN_RUN.match(text, i)
            if run is not None:  # the common case, at once
                out.append(run.group())
                i = run.end()
                continue
            if not first and not _argument_ok(text, i, start):
                return None
            out.append(char)
            i += 1
        else:
            return None
    return "".join(out), i


def _argument_ok(text: str, i: int, start: int) -> bool:
    """``#`` is literal except at the start of a word (a comment); ``~`` only as ``~`` or ``~/…`` at
    the start (the home directory) or inside a word after anything but ``=`` or ``:``."""
    char = text[i]
    if char == "#":
        return i > start
    if char == "~":
        if i == start:
            return i + 1 >= len(text) or text[i + 1] in "/ \t"
        return text[i - 1] not in "=:"
    return True


def _double_quoted(text: str, i: int) -> tuple[str, int] | None:
    """The inside of ``"…"`` from ``text[i]``: no expansion (``$``, a backtick) allowed."""
    out: list[str] = []
    n = len(text)
    while i < n:
        char = text[i]
        if char == '"':
            return "".join(out), i + 1
        if char in "$`":
            return None
        if char == "\\":
            if i + 1 >= n:
                return None
            following = text[i + 1]
            out.append(following if following in '"\\$`' else "\\" + following)
            i += 2
            continue
        out.append(char)
        i += 1
    return None


# -- the generous reader ------------------------------------------------------------------------------


_OPERATOR_CHARS: Final = frozenset(";&|()<>")
_REDIRECTION_OPERATORS: Final = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", "<", ">")
_OPERATORS: Final = (";;&", ";;", ";&", "&&", "||", "|&", *_REDIRECTION_OPERATORS, ";", "&", "|", "(", ")")
"""bash's operators, longest first."""
_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_LEADING_KEYWORDS: Final = frozenset({"!", "{", "}", "(", "do", "done", "elif", "else", "fi", "if", "then", "time",
                                      "until", "while", "coproc", "esac", "-p"})
WRAPPERS: Final = frozenset({
    "builtin", "busybox", "chroot", "command", "doas", "env", "exec", "flock", "ionice", "nice", "nohup", "pkexec",
    "runuser", "setsid", "stdbuf", "strace", "ltrace", "sudo", "su", "taskset", "time", "timeout", "torsocks",
    "unshare", "nsenter", "watch", "xargs", "parallel", "script", "valgrind", "gdb", "caffeinate", "chrt", "numactl",
    "prlimit", "systemd-run", "firejail", "bwrap",
})
"""Programs that run another command given in their arguments."""
SHELLS: Final = frozenset({"bash", "sh", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "yash", "busybox"})
_EXEC_OPTIONS: Final = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_ANSI_ESCAPES: Final = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                        "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_NUMERIC: Final = re.compile(r"x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})|c(.)",
                                  re.S)
_MAX_DEPTH: Final = 16
"""Substitutions nested deeper than this are not read (what is inside stays unseen: never allowed, only asked)."""


class _Reader:
    """A forgiving single pass over bash text: words with quotes removed, split into simple commands."""

    def __init__(self, text: str, depth: int) -> None:
        self.text = text
        self.depth = depth
        self.segments: list[list[str]] = []
        """Simple commands found inside substitutions and strings (collected as they are met)."""
        self._was_quoted = False
        """Whether the word being read has a quoted part (``'EOF'`` here-documents do not expand; ``'2'>``
        is no file descriptor)."""
        self._line_began_single_quoted = False
        """The line being read began inside a single-quoted string (``'…'``, ``$'…'``): bash (5.2) then drops
        a backslash that ends the input (``'a<newline>b'\\`` runs ``a<newline>b``; after ``"…"`` it stays)."""

    def read(self, i: int = 0, closer: str | None = None) -> tuple[list[list[str]], int]:
        """The simple commands from ``i`` up to ``closer`` (``)``, or the end): (commands, index after)."""
        text, n = self.text, len(self.text)
        commands: list[list[str]] = [[]]
        word: list[str] = []
        in_word = False
        skip_next = False  # the next word is a redirection's target, not part of the command
        heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, expands, strip tabs)
        pending_heredoc: tuple[bool] | None = None
        parens = 0  # ( … ) opened inside this reading: their ) does not end a $( … )

        def end_word() -> None:
            nonlocal in_word, skip_next, pending_heredoc
            if not in_word:
                return
            value = "".join(word)
            word.clear()
            in_word = False
            if pending_heredoc is not None:
                heredocs.append((value, not self._was_quoted, pending_heredoc[0]))
                pending_heredoc = None
                skip_next = False
                return
            if skip_next:
                skip_next = False
                return
            commands[-1].append(value)

        while i < n:
            char = text[i]
            if char in _BLANKS:
                end_word()
                i += 1
            elif char == "\n":
                end_word()
                commands.append([])
                self._line_began_single_quoted = False
                i += 1
                for delimiter, expands, strip_tabs in heredocs:
                    i = self._heredoc_body(i, delimiter, expands, strip_tabs)
                heredocs.clear()
            elif char == "#" and not in_word:
                end = text.find("\n", i)
                i = n if end < 0 else end
            elif char == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    self._line_began_single_quoted = False
                    i += 2
                    continue
                if i + 1 < n or not self._line_began_single_quoted:  # else: the input's last character, dropped
                    word.append(text[i + 1] if i + 1 < n else "\\")
                    in_word = True
                    self._was_quoted = True
                i += 2
            elif char == "'":
                end = text.find("'", i + 1)
                end = n if end < 0 else end
                word.append(text[i + 1 : end])
                in_word, self._was_quoted = True, True
                self._line_began_single_quoted |= "\n" in text[i + 1 : end]
                i = end + 1
            elif char == "$" and i + 1 < n and text[i + 1] == "'":
                start = i
                decoded, i = self._ansi_c(i + 2)
                word.append(decoded)
                in_word, self._was_quoted = True, True
                self._line_began_single_quoted |= "\n" in text[start:i]
            elif char == '"' or (char == "$" and i + 1 < n and text[i + 1] == '"'):
                start = i
                chunk, i = self._double_quoted(i + (1 if char == '"' else 2))
                word.append(chunk)
                in_word, self._was_quoted = True, True
                if "\n" in text[start:i]:
                    self._line_began_single_quoted = False
            elif char == "`":
                i = self._backquoted(i + 1)
                in_word = True
            elif char == "$" and i + 1 < n and text[i + 1] == "(":
                i = self._substitution(i + 2)
                in_word = True
            elif char == "$" and i + 1 < n and text[i + 1] == "{":
                i = self._braced(i + 2)
                in_word = True
            elif char in "<>" and i + 1 < n and text[i + 1] == "(":
                end_word()
                i = self._substitution(i + 2)
            elif char in _OPERATOR_CHARS:
                operator = next(op for op in _OPERATORS if text.startswith(op, i))
                fd_prefix = in_word and not self._was_quoted and "".join(word).isdigit()
                if operator == "(":
                    parens += 1
                elif operator == ")":
                    if parens == 0 and closer == ")":
                        end_word()
                        return self._finish(commands), i + 1
                    parens = max(0, parens - 1)
                if operator in _REDIRECTION_OPERATORS:
                    if fd_prefix:  # 2>x: the 2 names a file descriptor, not a word
                        word.clear()
                        in_word = False
                    end_word()
                    if operator in ("<<", "<<-"):
                        pending_heredoc = (operator == "<<-",)
                        self._was_quoted = False
                    else:
                        skip_next = True
                else:
                    end_word()
                    commands.append([])
                i += len(operator)
            else:
                if not in_word:
                    self._was_quoted = False
                word.append(char)
                in_word = True
                i += 1
        end_word()
        return self._finish(commands), n

    def _finish(self, commands: list[list[str]]) -> list[list[str]]:
        return [command for command in commands if command]

    # -- quoting and substitutions --

    def _ansi_c(self, i: int) -> tuple[str, int]:
        text, n = self.text, len(self.text)
        out: list[str] = []
        while i < n and text[i] != "'":
            if text[i] == "\\" and i + 1 < n:
                following = text[i + 1]
                if following in _ANSI_ESCAPES:
                    out.append(_ANSI_ESCAPES[following])
                    i += 2
                    continue
                match = _ANSI_NUMERIC.match(text, i + 1)
                if match:
                    hexa = match.group(1) or match.group(2) or match.group(3)
                    if hexa:
                        out.append(chr(min(int(hexa, 16), 0x10FFFF)))
                    elif match.group(4):
                        out.append(chr(int(match.group(4), 8)))
                    else:
                        out.append(chr(ord(match.group(5)) & 0x1F))
                    i = match.end()
                    continue
                out.append("\\" + following)
                i += 2
                continue
            out.append(text[i])
            i += 1
        return "".join(out), i + 1

    def _double_quoted(self, i: int, closer: str | None = '"') -> tuple[str, int]:
        """``"…"`` from ``text[i]`` (or, with no ``closer``, an expanding here-document line to its end)."""
        text, n = self.text, len(self.text)
        out: list[str] = []
        while i < n:
            char = text[i]
            if char == closer:
                return "".join(out), i + 1
            if char == "\\" and i + 1 < n:
                following = text[i + 1]
                if following != "\n":
                    out.append(following if following in '"\\$`' else "\\" + following)
                i += 2
            elif char == "`":
                i = self._backquoted(i + 1)
            elif char == "$" and i + 1 < n and text[i + 1] == "(":
                i = self._substitution(i + 2)
            elif char == "$" and i + 1 < n and text[i + 1] == "{":
                i = self._braced(i + 2)
            else:
                out.append(char)
                i += 1
        return "".join(out), n

    def _nested(self, text: str) -> None:
        if self.depth < _MAX_DEPTH:
            self.segments.extend(command_segments(text, self.depth + 1))

    def _substitution(self, i: int) -> int:
        """``$(…)`` (also ``$((…))`` and ``<(…)``): the commands inside count; returns the index after ``)``."""
        if self.depth >= _MAX_DEPTH:
            return len(self.text)
        inner = _Reader(self.text, self.depth + 1)
        commands, end = inner.read(i, ")")
        self.segments.extend(inner.segments)
        self.segments.extend(_expand(commands, self.depth + 1))
        return end

    def _backquoted(self, i: int) -> int:
        text, n = self.text, len(self.text)
        out: list[str] = []
        while i < n and text[i] != "`":
            if text[i] == "\\" and i + 1 < n:
                out.append(text[i + 1] if text[i + 1] in "$`\\" else text[i : i + 2])
                i += 2
                continue
            out.append(text[i])
            i += 1
        self._nested("".join(out))
        return i + 1

    def _braced(self, i: int) -> int:
        """``${…}``: its text may hold substitutions (``${x:-$(cmd)}``)."""
        text, n = self.text, len(self.text)
        depth, start = 1, i
        while i < n and depth:
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
            i += 1
        inside = text[start : i - 1 if depth == 0 else n]
        if "$(" in inside or "`" in inside:
            self._nested(inside)
        return i

    def _heredoc_body(self, i: int, delimiter: str, expands: bool, strip_tabs: bool) -> int:
        text, n = self.text, len(self.text)
        while i < n:
            end = text.find("\n", i)
            line = text[i : n if end < 0 else end]
            i = n if end < 0 else end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
            if expands and ("$(" in line or "`" in line or "${" in line):
                body = _Reader(line, self.depth + 1)
                body._double_quoted(0, closer=None)
                self.segments.extend(body.segments)
        return i


def _expand(commands: list[list[str]], depth: int) -> Iterator[list[str]]:
    """Each simple command as run: leading keywords and assignments dropped; behind a wrapper, the
    command it runs as well; a shell's ``-c`` string and ``eval``'s arguments read as commands."""
    for command in commands:
        yield command  # as written too: a quoted ``'}'`` or ``'if'`` is a program name
        words = list(command)
        while words and (words[0] in _LEADING_KEYWORDS or _ASSIGNMENT.match(words[0])):
            words.pop(0)
        if not words:
            continue
        if words != command:
            yield words
        if depth >= _MAX_DEPTH:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program in WRAPPERS or program in SHELLS or program == "eval":
            for start in range(1, len(words)):
                if not words[start].startswith("-") and not _ASSIGNMENT.match(words[start]):
                    yield words[start:]
        if program in SHELLS or program == "eval":
            for index, word in enumerate(words[1:], 1):
                if program == "eval" or (word.startswith("-") and "c" in word and index + 1 < len(words)):
                    script = " ".join(words[index:]) if program == "eval" else words[index + 1]
                    yield from command_segments(script, depth + 1)
                    break
        if program == "find":
            for index, word in enumerate(words):
                if word in _EXEC_OPTIONS and index + 1 < len(words):
                    yield words[index + 1 :]


def command_segments(command: str, depth: int = 0) -> list[list[str]]:
    """Every simple command bash could run for ``command`` (see the module doc), generously."""
    reader = _Reader(command, depth)
    commands, _ = reader.read()
    return [*_expand(commands, depth), *reader.segments]


# -- programs that run what their words do not show ------------------------------------------------


INTERPRETERS: Final = frozenset({
    "node", "nodejs", "deno", "bun", "bunx", "ruby", "irb", "perl", "php", "lua", "luajit", "tclsh", "wish",
    "Rscript", "julia", "osascript", "pwsh", "powershell", "awk", "gawk", "mawk", "nawk", "busybox", "sed", "gsed",
    "vi", "vim", "nvim", "ex", "ed", "emacs", "gdb", "lldb", "expect", "java", "jshell", "groovy", "scala", "elixir",
    "iex", "erl", "escript", "ghci", "runghc", "swift", "kotlin", "source", ".", "eval", "npx", "pnpx", "uvx",
    "pipx", "ssh", "mosh",
})
"""Programs that run whatever code or commands their arguments (or a file they name) hold."""
_PYTHON: Final = re.compile(r"^(?:i?python|pypy)[0-9.]*$")
_SUBCOMMAND_WRAPPERS: Final = frozenset({
    ("uv", "run"), ("uv", "tool"), ("poetry", "run"), ("pipenv", "run"), ("hatch", "run"), ("pdm", "run"),
    ("npm", "exec"), ("npm", "x"), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "exec"), ("yarn", "dlx"),
    ("bun", "x"), ("bun", "run"), ("bun", "exec"), ("deno", "run"), ("deno", "eval"), ("cargo", "run"),
    ("go", "run"), ("go", "generate"), ("docker", "run"), ("docker", "exec"), ("docker", "create"),
    ("podman", "run"), ("podman", "exec"), ("podman", "create"), ("kubectl", "exec"), ("kubectl", "run"),
    ("kubectl", "debug"), ("git", "config"), ("git", "submodule"), ("git", "bisect"), ("git", "filter-branch"),
    ("gh", "alias"), ("gh", "extension"), ("systemctl", "edit"),
})
"""``program subcommand`` pairs that run a command given after them (or install one that runs later)."""
_RISKY_OPTIONS: Final[dict[tuple[str, str | None], tuple[str, ...]]] = {
    ("find", None): ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    ("tar", None): ("--to-command", "--checkpoint-action", "--use-compress-program", "-I", "--info-script", "-F",
                    "--new-volume-script", "--rsh-command"),
    ("rsync", None): ("-e", "--rsh", "--rsync-path"),
    ("scp", None): ("-S", "-o", "-F"),
    ("sftp", None): ("-S", "-o", "-F", "-D"),
    ("make", None): ("--eval", "-E"),
    ("npm", None): ("--script-shell",),
    ("zip", None): ("-T", "--test", "--unzip-command"),
    ("rg", None): ("--pre",),
    ("fd", None): ("-x", "--exec", "-X", "--exec-batch"),
    ("fdfind", None): ("-x", "--exec", "-X", "--exec-batch"),
    ("sort", None): ("--compress-program",),
    ("split", None): ("--filter",),
    ("man", None): ("-P", "--pager", "-H", "--html"),
    ("git", "grep"): ("-O", "--open-files-in-pager"),
    ("git", "rebase"): ("-x", "--exec"),
    ("git", "clone"): ("-u", "--upload-pack", "-c", "--config", "--template"),
    ("git", "fetch"): ("--upload-pack",),
    ("git", "pull"): ("--upload-pack",),
    ("git", "ls-remote"): ("--upload-pack",),
    ("git", "archive"): ("--exec", "--remote"),
    ("git", "push"): ("--receive-pack", "--exec"),
    ("git", "difftool"): ("-x", "--extcmd", "-t", "--tool"),
    ("git", "mergetool"): ("-t", "--tool"),
}
"""Options that make an otherwise plain program run another command (``(program, subcommand)``; ``None``:
wherever they appear). ``--long`` matches itself, ``--long=…`` and every abbreviation of it (``--to-comm=sh``:
GNU getopt_long, argp and git take any unambiguous prefix of a long option); ``-x`` matches inside any bundle of
short options (``-avze``); a single-dash long option (``find -exec``) matches only itself."""
_GIT_COMMANDS: Final = frozenset({
    "add", "am", "annotate", "apply", "archive", "blame", "branch", "bundle", "checkout", "cherry", "cherry-pick",
    "clean", "clone", "commit", "count-objects", "describe", "diff", "difftool", "fetch", "format-patch", "fsck",
    "gc", "grep", "help", "init", "log", "ls-files", "ls-remote", "ls-tree", "merge", "merge-base", "mergetool", "mv",
    "notes", "pull", "push", "range-diff", "rebase", "reflog", "remote", "repack", "replace", "reset", "restore",
    "revert", "rev-list", "rev-parse", "rm", "shortlog", "show", "show-branch", "show-ref", "sparse-checkout",
    "stash", "status", "switch", "tag", "version", "whatchanged", "worktree", "cat-file", "hash-object",
    "for-each-ref", "name-rev", "verify-commit", "verify-tag",
})
"""git's own commands: any other word after ``git`` may be an alias, and an alias may be ``!any command``."""


def runs_other_commands(words: Sequence[str]) -> str | None:
    """Why the simple command ``words`` may run code or commands its words do not spell out — an
    interpreter, a wrapper (``sudo``, ``env``, ``xargs`` …), ``find -exec``, ``git -c`` or an alias, a
    ``tar --to-command`` … — or ``None``. Such a command is never generalised into a rule, and a
    generalised rule (``program *``) never covers one."""
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program in SHELLS or program in INTERPRETERS or _PYTHON.match(program):
        return f"{program} runs whatever code it is given"
    if program in WRAPPERS:
        return f"{program} runs another command"
    if len(words) >= 2 and (program, words[1]) in _SUBCOMMAND_WRAPPERS:
        return f"{program} {words[1]} runs another command"
    if program == "git" and len(words) >= 2:
        if words[1].startswith("-"):
            return "git options before the command (-c, -C, --exec-path …) change what it runs"
        if words[1] not in _GIT_COMMANDS:
            return f"git {words[1]} may be an alias, and an alias may run any command"
    risky = _RISKY_OPTIONS.get((program, None), ())
    if len(words) >= 2:
        risky += _RISKY_OPTIONS.get((program, words[1]), ())
    for option in risky:
        if any(_is_option(word, option) for word in words[1:]):
            return f"{program} {option} runs another command"
    return None


def _is_option(word: str, option: str) -> bool:
    if option.startswith("--"):
        name = word.split("=", 1)[0]
        return len(name) > 2 and name.startswith("--") and option.startswith(name)
    if len(option) == 2:  # -x, also bundled: -avze
        return word.startswith("-") and not word.startswith("--") and option[1] in word[1:]
    return word == option
