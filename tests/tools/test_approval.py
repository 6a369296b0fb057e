"""The approval gate, the call facts a person decides on, and the remembered rules (file + matching)."""

from __future__ import annotations

import json
import os
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rpcd.core.values import AlwaysRule, ApprovalRule, ToolApprovalAnswer, ToolApprovalRequest
from rpcd.tools import AbortSignal, ToolCall, builtin_profile, extension_profile
from rpcd.tools.approval import ApprovalGate
from rpcd.tools.approval_facts import bash_kind, describe_call, preview_arguments, rule_prefix
from rpcd.tools.approval_rules import (
    ApprovalRules,
    ApprovalRulesError,
    always_rule,
    canonical_project,
    command_matches,
    new_rule,
    path_matches,
)
from rpcd.tools.shell_syntax import RESERVED_WORDS, command_segments, runs_other_commands, simple_command_words

# -- what a call is -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "args", "kind", "title", "writes"), [
    ("bash", {"command": "rm -rf build"}, "delete", "bash: rm -rf build", True),
    ("bash", {"command": "mv a b"}, "move", "bash: mv a b", True),
    ("bash", {"command": "curl -s https://example.org"}, "fetch", "bash: curl -s https://example.org", True),
    ("bash", {"command": "rm x && ls"}, "execute", "bash: rm x && ls", True),
    ("bash", {"command": "npm test\nnpm run lint"}, "execute", "bash: npm test …", True),
    ("edit", {"path": "src/a.py", "edits": []}, "edit", "edit src/a.py", True),
    ("write", {"path": "src/b.py", "content": ""}, "edit", "write src/b.py", True),
    ("read", {"path": "README.md", "offset": 10}, "read", "read README.md", False),
    ("ls", {}, "read", "ls .", False),
    ("grep", {"pattern": "TODO", "path": "src"}, "search", 'grep "TODO" in src', False),
    ("find", {"pattern": "*.py"}, "search", "find *.py in .", False),
])
def test_builtin_calls_get_an_acp_kind_a_one_line_title_and_a_write_flag(
        name: str, args: dict[str, Any], kind: str, title: str, writes: bool) -> None:
    facts = describe_call(name, args, cwd="/work/p", profile=builtin_profile(name))
    assert (facts.kind, facts.title, facts.writes) == (kind, title, writes)


def test_file_tools_name_their_absolute_location_and_bash_none() -> None:
    read = describe_call("read", {"path": "../q/x.txt", "offset": 3}, cwd="/work/p", profile=builtin_profile("read"))
    assert [(loc.path, loc.line) for loc in read.locations] == [("/work/q/x.txt", 3)]
    assert read.path == "/work/q/x.txt"
    grep = describe_call("grep", {"pattern": "x"}, cwd="/work/p", profile=builtin_profile("grep"))
    assert [loc.path for loc in grep.locations] == ["/work/p"]
    bash = describe_call("bash", {"command": "ls"}, cwd="/work/p", profile=builtin_profile("bash"))
    assert bash.locations == () and bash.command == "ls"


def test_extension_tools_are_writes_unless_declared_read_only_even_under_a_builtin_name() -> None:
    assert describe_call("deploy", {"env": "prod"}, cwd="/p", profile=extension_profile()).writes is True
    assert describe_call("peek", {}, cwd="/p", profile=extension_profile(read_only=True)).writes is False
    facts = describe_call("read", {"path": "x"}, cwd="/p", profile=extension_profile())
    assert (facts.kind, facts.writes, facts.title, facts.path) == ("other", True, 'read {"path":"x"}', None)


def test_a_long_title_is_cut_to_one_line() -> None:
    facts = describe_call("bash", {"command": "echo " + "y" * 500}, cwd="/p", profile=builtin_profile("bash"))
    assert len(facts.title) <= 122 and facts.title.endswith(" …") and "\n" not in facts.title


def test_previews_cut_long_strings_anywhere_and_say_how_much() -> None:
    args = {"content": "a" * 2500, "edits": [{"oldText": "b" * 10, "newText": "c" * 2001}], "n": 3}
    assert preview_arguments(args) == {
        "content": "a" * 2000 + "… [500 more characters]",
        "edits": [{"oldText": "b" * 10, "newText": "c" * 2000 + "… [1 more characters]"}],
        "n": 3,
    }


@given(st.recursive(st.text(max_size=60) | st.integers() | st.none(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                                max_size=4), max_leaves=20))
def test_a_preview_keeps_short_values_as_they_are(value: Any) -> None:
    assert preview_arguments(value, limit=60) == value


# -- commands ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "words"), [
    ("npm test -- --watch", ["npm", "test"]),
    ("git push origin main", ["git", "push"]),
    ("rm -rf build", ["rm"]),
    ("ls src", ["ls"]),
    ("/usr/bin/make test", ["/usr/bin/make", "test"]),
    ("find . -name '*.py'", ["find"]),
    ("tar -czf out.tgz src", ["tar"]),
])
def test_an_always_answer_remembers_the_program_and_its_subcommand(command: str, words: list[str]) -> None:
    parsed = simple_command_words(command)
    assert parsed is not None and rule_prefix(parsed) == words
    assert new_rule(_bash(command), "/p", "allow").command == f"{shlex.join(words)} *"


WRAPPERS = [
    "python3 -c 'print(1)'", "python -m pytest -x", "python3.12 x.py", "pypy3 x.py", "node x.js", "deno run x.ts",
    "bun run x", "ruby -e 1", "perl -e 1", "php -r 1", "awk '{print}' f", "sed -n 1p f", "bash -c ls", "sh x.sh",
    "zsh -c ls", "env", "env touch x", "xargs rm", "sudo ls", "nice ls", "timeout 5 ls", "nohup ls", "command ls",
    "exec ls", "watch ls", "strace ls", "find . -exec rm '{}' +", "find . -execdir rm '{}' +", "find . -ok rm '{}' +",
    "find . -delete", "git -c alias.z=!touch z", "git -C /tmp status", "git --version", "git z", "git config x y",
    "git rebase -x 'make test' main", "git submodule foreach rm", "tar -xf a.tar --to-command=sh",
    "tar -cI 'sh -c x' -f a.tar .", "rsync -avze ssh a b", "make --eval='x:;touch y' x",
    "npm exec cowsay", "npx cowsay", "uv run python", "poetry run x", "docker run --rm -v /:/h alpine",
    "kubectl exec pod -- sh", "ssh host rm x", "vim -c '!ls'",
    # options that run a command, and the abbreviations getopt_long / argp / git accept for a long one
    "rg --pre=rm x src", "rg --pre rm x src", "fd -x rm", "fd . -X rm", "fd --exec rm", "fdfind --exec-batch rm",
    "git grep -Otouch x", "git grep --open-files-in-pager=touch x", "git grep --open-files=touch x",
    "sort --compress-program=sh -S 1 f", "split --filter=sh f", "split --filt=sh f", "man -P sh ls",
    "tar -xf a.tar --to-comm=sh", "tar -cf a.tar --use-compress=sh .", "make test --eva=x",
]


@pytest.mark.parametrize("command", WRAPPERS)
def test_interpreters_and_wrappers_are_remembered_exactly_never_as_a_prefix(command: str) -> None:
    """``allowAlways`` on ``python3 -c …`` used to store ``python3 *``, on ``git --version`` ``git *``: rules
    that then let any code run. The request says what will be stored; a stored prefix never covers one."""
    facts = _bash(command)
    for decision in ("allow", "reject"):
        assert new_rule(facts, "/p", decision).command == command
    described = always_rule(facts, "/p")
    assert (described.command, described.description) == (command, "exactly this bash command")
    words = simple_command_words(command)
    assert words is not None and runs_other_commands(words)
    # an older (or hand-written) prefix rule for the program does not cover it either; a reject one does
    assert not command_matches(f"{shlex.quote(words[0])} *", command, reject=False)
    assert command_matches(f"{shlex.quote(words[0])} *", command, reject=True)


@pytest.mark.parametrize("command", ["git --version", "npm --version", "docker", "make"])
def test_a_program_with_subcommands_given_none_is_remembered_exactly(command: str) -> None:
    """``git *`` or ``npm *`` would cover ``git -c …`` and ``npm exec …``."""
    assert new_rule(_bash(command), "/p", "allow").command == command


def test_the_rule_an_always_answer_would_store_is_described_for_each_kind_of_tool(tmp_path: Path) -> None:
    project = canonical_project(str(tmp_path))
    assert always_rule(_bash("ls -la"), project) == AlwaysRule(
        "bash", "bash commands `ls *` (one simple command each)", command="ls *")
    assert always_rule(_bash("ls; rm x"), project) == AlwaysRule(
        "bash", "exactly this bash command", command="ls; rm x")
    write = describe_call("write", {"path": "a[1].txt", "content": ""}, cwd=project, profile=builtin_profile("write"))
    assert always_rule(write, project) == AlwaysRule("write", "write calls on `a\\[1\\].txt`", path="a\\[1\\].txt")
    deploy = describe_call("deploy", {}, cwd=project, profile=extension_profile())
    assert always_rule(deploy, project) == AlwaysRule("deploy", "every deploy call")


@pytest.mark.parametrize("command", [
    "a; b", "a && b", "a || b", "a | b", "a > f", "a < f", "a &", "(a)", "a $(b)", "a `b`", "a\nb", "echo 'open",
])
def test_anything_but_one_simple_command_is_not_simple(command: str) -> None:
    assert simple_command_words(command) is None


def test_segments_split_at_operators_and_substitutions() -> None:
    assert command_segments("cd a && rm -rf x; echo $(rm y) `rm z`") == [
        ["cd", "a"], ["rm", "-rf", "x"], ["echo", "", ""], ["rm", "y"], ["rm", "z"]]
    assert bash_kind("rm x") == "delete" and bash_kind("/bin/rm x") == "delete"


def test_allow_prefix_rules_cover_only_simple_commands_reject_rules_any_segment() -> None:
    assert command_matches("npm test *", "npm test -- --watch", reject=False)
    assert command_matches("npm test *", "npm test", reject=False)
    assert not command_matches("npm test *", "npm testing", reject=False)
    assert not command_matches("npm test *", "npm test && rm -rf /", reject=False)
    assert not command_matches("npm test *", "npm test > /etc/passwd", reject=False)
    assert not command_matches("npm test *", "X=1 npm test", reject=False)
    assert command_matches("rm *", "cd build && rm -rf x", reject=True)
    assert command_matches("rm *", "/bin/rm -rf x", reject=True)
    assert not command_matches("rm *", "echo rm", reject=True)
    # a whole command: exactly that command (leading and trailing blanks aside), for either decision
    assert command_matches("cd a && make", " cd a && make\n", reject=False)
    assert not command_matches("cd a && make", "cd a  &&  make", reject=False)
    assert not command_matches("cd a && make", "cd a && make install", reject=False)
    # whitespace is not noise: a newline ends a comment (what was shown ran nothing after the #)
    assert not command_matches("echo a # rm -rf x", "echo a #\nrm -rf x", reject=False)


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-._/", min_size=1, max_size=8).filter(
    lambda w: not w.startswith("-") or len(w) > 1)
_PROGRAM = _WORD.filter(lambda w: not w.startswith("-") and w not in RESERVED_WORDS and rule_prefix([w]) is not None)
# (bash -c reads "-x" as its own option; "if", "do" … are no programs; wrappers are remembered exactly)
_OPERATOR = st.sampled_from([";", "&&", "||", "|", "&", ">", "<", ">>", "2>&1 |"])


@given(_PROGRAM, st.lists(_WORD, max_size=3), _OPERATOR, st.lists(_WORD, min_size=1, max_size=4))
def test_a_remembered_allow_never_covers_a_command_with_an_operator(program: str, head: list[str], op: str,
                                                                     tail: list[str]) -> None:
    first = shlex.join([program, *head])
    rule_command = new_rule(_bash(first), "/p", "allow").command
    assert rule_command is not None
    assert command_matches(rule_command, first, reject=False)
    assert not command_matches(rule_command, f"{first} {op} {shlex.join(tail)}", reject=False)


@given(st.lists(_WORD, min_size=1, max_size=4), st.sampled_from([";", "&&", "||", "|"]), _PROGRAM,
       st.lists(_WORD, max_size=3))
def test_a_remembered_reject_covers_the_command_wherever_it_appears(head: list[str], op: str, program: str,
                                                                    tail: list[str]) -> None:
    rejected = shlex.join([program, *tail])
    rule_command = new_rule(_bash(rejected), "/p", "reject").command
    assert rule_command is not None
    assert command_matches(rule_command, f"{shlex.join(head)} {op} {rejected}", reject=True)


def _bash(command: str) -> Any:
    return describe_call("bash", {"command": command}, cwd="/p", profile=builtin_profile("bash"))


# -- paths --------------------------------------------------------------------------------------------------


def test_path_rules_are_globs_relative_to_the_project_and_follow_symbolic_links(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "src").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "src" / "link").symlink_to(outside)
    root = canonical_project(str(project))
    assert path_matches("src/**", str(project / "src" / "a" / "b.py"), root)
    assert path_matches("src/*.py", str(project / "src" / "a.py"), root)
    assert not path_matches("src/*.py", str(project / "src" / "a" / "b.py"), root)
    assert not path_matches("src/**", str(project / "src" / "link" / "x"), root)  # really outside
    assert path_matches(f"{os.path.realpath(outside)}/*", str(project / "src" / "link" / "x"), root)
    assert not path_matches("**", str(outside / "x"), root)


def test_a_remembered_path_matches_only_itself_even_with_glob_characters(tmp_path: Path) -> None:
    project = canonical_project(str(tmp_path))
    facts = describe_call("write", {"path": "a[1]*.txt"}, cwd=project, profile=builtin_profile("write"))
    rule = new_rule(facts, project, "allow")
    assert rule.path == "a\\[1\\]\\*.txt"
    assert path_matches(rule.path, os.path.join(project, "a[1]*.txt"), project)
    assert not path_matches(rule.path, os.path.join(project, "a1x.txt"), project)


# -- the rules file ------------------------------------------------------------------------------------------


def _rule(project: str, **kw: Any) -> ApprovalRule:
    fields: dict[str, Any] = {"id": "r1", "project": project, "tool_name": "bash", "decision": "allow",
                              "created_at": "2026-01-01T00:00:00.000Z", "command": "npm test *"}
    fields.update(kw)
    return ApprovalRule(**fields)


def test_rules_are_written_0600_deduplicated_listed_per_project_and_revoked(tmp_path: Path) -> None:
    rules = ApprovalRules.in_agent_dir(str(tmp_path / "agent"))
    first = rules.add(_rule("/p"))
    assert rules.add(_rule("/p", id="r2")) == first  # the same matcher is kept once
    rules.add(_rule("/q", id="r3", tool_name="write", command=None, path="src/**", decision="reject"))
    assert stat.S_IMODE(os.stat(rules.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(rules.path)).st_mode) == 0o700
    assert [r.id for r in rules.for_project("/p")] == ["r1"]
    assert [r.id for r in rules.for_project(None)] == ["r1", "r3"]
    assert rules.revoke("r1") == first and rules.revoke("r1") is None
    assert [r.id for r in rules.for_project(None)] == ["r3"]
    assert not [n for n in os.listdir(os.path.dirname(rules.path)) if n.endswith(".tmp")]


def test_entries_this_version_does_not_understand_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "approvals.json"
    foreign = [{"id": "x", "project": "/p", "toolName": "bash", "decision": "ask", "createdAt": "t"}, "junk", 7]
    path.write_text("\ufeff" + json.dumps({"version": 9, "rules": foreign, "other": True}))
    rules = ApprovalRules(str(path))
    assert rules.read() == ([], None)
    rules.add(_rule("/p"))
    assert json.loads(path.read_text())["rules"][:3] == foreign


@pytest.mark.parametrize("content", ["{oops", "[]", '{"rules": {}}', "\xff\xfe"])
def test_an_unusable_file_gives_no_rule_a_warning_and_is_never_rewritten(tmp_path: Path, content: str) -> None:
    path = tmp_path / "approvals.json"
    path.write_bytes(content.encode("latin-1"))
    rules = ApprovalRules(str(path))
    assert rules.read()[0] == [] and rules.read()[1]
    assert rules.warning() is not None and str(path) in rules.warning()
    for change in (lambda: rules.add(_rule("/p")), lambda: rules.revoke("r1")):
        with pytest.raises(ApprovalRulesError):
            change()
    assert path.read_bytes() == content.encode("latin-1")


# -- the gate ------------------------------------------------------------------------------------------------


class Approver:
    def __init__(self, *answers: ToolApprovalAnswer, hang: bool = False) -> None:
        self.answers = list(answers)
        self.hang = hang
        self.asked: list[ToolApprovalRequest] = []
        self.cancelled = False
        self.waiting = anyio.Event()

    async def __call__(self, request: ToolApprovalRequest) -> ToolApprovalAnswer:
        self.asked.append(request)
        if self.hang:
            self.waiting.set()
            try:
                await anyio.sleep_forever()
            except BaseException:
                self.cancelled = True
                raise
        return self.answers.pop(0)


def _write(path: str = "a.txt") -> ToolCall:
    return ToolCall("c1", "write", {"path": path, "content": "x"})


def test_the_policy_in_force_the_override_then_the_setting_then_the_capability() -> None:
    gate = ApprovalGate()
    assert gate.effective_policy() == "auto"
    gate.client_can_answer = True
    assert gate.effective_policy() == "ask-writes"
    assert gate.effective_policy("deny-writes") == "deny-writes"
    assert gate.effective_policy("nonsense") == "ask-writes"
    (warning,) = gate.diagnostics("nonsense")
    assert warning.message.startswith('Setting "approvalPolicy" ignored')
    gate.set_policy("ask-all")
    assert gate.effective_policy("deny-writes") == "ask-all"


@pytest.mark.anyio
async def test_always_answers_store_a_rule_that_decides_the_next_call(tmp_path: Path) -> None:
    rules = ApprovalRules(str(tmp_path / "approvals.json"))
    gate = ApprovalGate(rules, client_can_answer=True)
    approver = Approver(ToolApprovalAnswer("rejectAlways", "never"))
    kw: Mapping[str, Any] = {"cwd": str(tmp_path), "profile": builtin_profile("write"), "approver": approver}
    block = await gate.authorize(_write(), AbortSignal(), **kw)
    assert block is not None and block.reason == "Tool call rejected by the user: never"
    again = await gate.authorize(_write(), AbortSignal(), **kw)
    assert again is not None and again.reason is not None and "remembered approval rule" in again.reason
    assert len(approver.asked) == 1
    assert await gate.authorize(_write("other.txt"), AbortSignal(), **{**kw, "approver": Approver(
        ToolApprovalAnswer("allowOnce"))}) is None


@pytest.mark.anyio
async def test_an_abort_while_asking_cancels_the_question() -> None:
    gate = ApprovalGate(client_can_answer=True)
    approver = Approver(hang=True)
    signal = AbortSignal()
    async with anyio.create_task_group() as group:
        result: list[Any] = []

        async def authorize() -> None:
            result.append(await gate.authorize(_write(), signal, cwd="/p", profile=builtin_profile("write"),
                                               approver=approver))

        group.start_soon(authorize)
        await approver.waiting.wait()
        signal.abort()
    assert approver.cancelled and result == [None]  # the seam turns an aborted signal into "Operation aborted"


@pytest.mark.anyio
async def test_no_approver_or_a_failing_one_refuses_and_never_runs() -> None:
    gate = ApprovalGate(client_can_answer=True)

    async def broken(request: ToolApprovalRequest) -> ToolApprovalAnswer:
        raise RuntimeError("bug")

    for approver, text in ((None, "needs a client that answers approval requests"),
                           (broken, "the approval request failed")):
        block = await gate.authorize(_write(), AbortSignal(), cwd="/p", profile=builtin_profile("write"),
                                     approver=approver)
        assert block is not None and block.reason is not None and text in block.reason


def test_deeply_nested_arguments_are_previewed_and_titled_without_failing() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = {"d": deep}
    facts = describe_call("deploy", {"spec": deep}, cwd="/p", profile=extension_profile())
    assert facts.title.startswith('deploy {"spec":{"d":') and len(facts.title) <= 122
    level, depth = facts.arguments, 0
    while isinstance(level, dict):
        level, depth = next(iter(level.values())), depth + 1
    assert level == "…" and depth == 32


def test_a_change_by_another_writer_or_a_hand_edit_is_seen_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "approvals.json")
    ours, theirs = ApprovalRules(path), ApprovalRules(path)
    assert ours.read() == ([], None)
    theirs.add(_rule("/p"))
    assert [r.id for r in ours.for_project("/p")] == ["r1"]
    with open(path, "r+") as handle:  # in place, same inode: another size
        text = handle.read().replace('"r1"', '"r22"')
        handle.seek(0)
        handle.write(text)
    assert [r.id for r in ours.for_project("/p")] == ["r22"]
    with open(path, "w") as handle:
        handle.write("{broken")
    assert ours.read()[0] == [] and ours.read()[1] is not None
