"""Sessions for the compaction differential, written by real Pi's ``SessionManager``
(``PiReader.write``: an operation program, see ``runProgram`` in inspect.mjs).

``programs()`` is a hypothesis strategy of random programs: every message role with the
shapes that change a token estimate or the serialized text (string and block content, images,
thinking, tool calls whose arguments have integer-like keys, nested values and astral
characters, tool results around the 2,000-character cut, bash executions, custom messages),
usage that is valid, zero or on an errored reply, earlier compactions (kept boundary on the
path, off it, missing; ``fromHook``; ``details`` with file lists), branch summaries, labels,
metadata entries and leaf moves (branches). ``long_program`` is a deterministic long coding
session: many tool rounds with large results, three compactions, a side branch.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

Program = list[list[Any]]

MODEL_PROVIDER, MODEL_ID = "anthropic", "claude-sonnet-4-5"
TOOLS = ("read", "write", "edit", "bash", "grep", "ls", "my_tool")

_alphabet = st.sampled_from([*'abc xyz\n\t"\\{}é漢', "😀", "𝄞", "\u2028"])
short_text = st.text(_alphabet, max_size=40)
long_text = st.builds(lambda unit, n, tail: unit * n + tail,
                      st.sampled_from(["ab", "x😀", "é漢 ", "line\n"]), st.integers(300, 1200), short_text)
texts = st.one_of(short_text, short_text, long_text)
paths = st.sampled_from(["src/a.py", "src/b.py", "README.md", "ü/😀.txt", "Z.md", "a.py"])

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                      st.floats(allow_nan=False, allow_infinity=False, width=32), short_text)
json_values = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["k", "0", "10", "2", "b", "a"]), inner, max_size=3)),
    max_leaves=6)


@st.composite
def tool_arguments(draw: st.DrawFn) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if draw(st.booleans()):
        args["path"] = draw(st.one_of(paths, paths, st.just(""), st.integers(0, 3)))
    extra = draw(st.dictionaries(st.sampled_from(["command", "offset", "10", "1", "oldText", "nested"]), json_values,
                                 max_size=3))
    args.update(extra)
    return args


def _usage(total: int, *, zero: bool = False) -> dict[str, Any]:
    if zero:
        total = 0
    return {"input": total, "output": total // 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total + total // 10,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


@st.composite
def assistant(draw: st.DrawFn, timestamp: int) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for kind in draw(st.lists(st.sampled_from(["text", "thinking", "toolCall"]), max_size=4)):
        if kind == "text":
            blocks.append({"type": "text", "text": draw(texts)})
        elif kind == "thinking":
            blocks.append({"type": "thinking", "thinking": draw(texts), "thinkingSignature": "sig"})
        else:
            blocks.append({"type": "toolCall", "id": f"call_{draw(st.integers(0, 999))}",
                           "name": draw(st.sampled_from(TOOLS)), "arguments": draw(tool_arguments())})
    stop = draw(st.sampled_from(["stop", "stop", "toolUse", "length", "error", "aborted"]))
    message: dict[str, Any] = {"role": "assistant", "content": blocks, "api": "anthropic-messages",
                               "provider": MODEL_PROVIDER, "model": MODEL_ID,
                               "usage": _usage(draw(st.integers(0, 50_000)), zero=draw(st.booleans())),
                               "stopReason": stop, "timestamp": timestamp}
    if stop == "error":
        message["errorMessage"] = draw(st.sampled_from(["overloaded", "prompt is too long: 1 tokens > 2 maximum"]))
    return message


@st.composite
def user(draw: st.DrawFn, timestamp: int) -> dict[str, Any]:
    if draw(st.booleans()):
        content: Any = draw(texts)
    else:
        content = [draw(st.one_of(st.builds(lambda t: {"type": "text", "text": t}, texts),
                                  st.just({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})))
                   for _ in range(draw(st.integers(0, 3)))]
    return {"role": "user", "content": content, "timestamp": timestamp}


@st.composite
def message_op(draw: st.DrawFn, timestamp: int) -> list[Any]:
    kind = draw(st.sampled_from(["user", "assistant", "assistant", "toolResult", "toolResult", "bash"]))
    if kind == "user":
        return ["message", draw(user(timestamp))]
    if kind == "assistant":
        return ["message", draw(assistant(timestamp))]
    if kind == "toolResult":
        content = [{"type": "text", "text": draw(texts)} for _ in range(draw(st.integers(0, 2)))]
        return ["message", {"role": "toolResult", "toolCallId": f"call_{draw(st.integers(0, 999))}",
                            "toolName": draw(st.sampled_from(TOOLS)), "content": content,
                            "isError": draw(st.booleans()), "timestamp": timestamp}]
    bash: dict[str, Any] = {"role": "bashExecution", "command": draw(short_text), "output": draw(texts),
                            "exitCode": draw(st.sampled_from([0, 1, None])), "cancelled": draw(st.booleans()),
                            "truncated": False, "timestamp": timestamp}
    if draw(st.booleans()):
        bash["excludeFromContext"] = True
    return ["message", bash]


@st.composite
def other_op(draw: st.DrawFn) -> list[Any]:
    kind = draw(st.sampled_from(["compaction", "compaction", "branch_summary", "custom_message", "label", "custom",
                                 "model_change", "thinking", "branch", "name"]))
    index = draw(st.integers(0, 10_000))
    files = st.lists(paths, max_size=3)
    if kind == "compaction":
        details = draw(st.one_of(st.none(), st.builds(lambda r, m: {"readFiles": r, "modifiedFiles": m}, files, files)))
        first_kept = None if draw(st.integers(0, 5)) == 0 else index
        return ["compaction", first_kept, draw(texts), draw(st.integers(0, 200_000)), details,
                draw(st.sampled_from([None, True, False]))]
    if kind == "branch_summary":
        details = draw(st.one_of(st.none(), st.builds(lambda r, m: {"readFiles": r, "modifiedFiles": m}, files, files)))
        return ["branch_summary", index, draw(st.one_of(texts, st.just(""))), details,
                draw(st.sampled_from([None, True]))]
    if kind == "custom_message":
        content = draw(st.one_of(texts, st.lists(st.builds(lambda t: {"type": "text", "text": t}, texts), max_size=2)))
        return ["custom_message", "note", content, draw(st.booleans()), None]
    if kind == "label":
        return ["label", index, draw(st.one_of(st.none(), short_text))]
    if kind == "custom":
        return ["custom", "state", {"n": index}]
    if kind == "model_change":
        return ["model_change", MODEL_PROVIDER, MODEL_ID]
    if kind == "thinking":
        return ["thinking", "high"]
    if kind == "branch":
        return ["branch", index]
    return ["name", draw(short_text) or "n"]


@st.composite
def programs(draw: st.DrawFn) -> Program:
    program: Program = [["model_change", MODEL_PROVIDER, MODEL_ID], ["thinking", "medium"]]
    clock = 1_768_000_000_000
    size = draw(st.integers(1, 40))
    for _ in range(size):
        clock += draw(st.integers(0, 3)) * 1000
        program.append(draw(message_op(clock)) if draw(st.integers(0, 3)) else draw(other_op()))
    # an assistant message makes Pi write the file (its flush rule)
    program.append(["message", {"role": "assistant", "content": [{"type": "text", "text": "done"}],
                                "api": "anthropic-messages", "provider": MODEL_PROVIDER, "model": MODEL_ID,
                                "usage": _usage(1000), "stopReason": "stop", "timestamp": clock}])
    return program


def long_program(turns: int = 400, seed: int = 17) -> Program:
    """A long coding session: read/edit/bash rounds with 3-8 KB results, compactions, a branch."""
    rng = random.Random(seed)
    words = "the tool result holds file contents and command output naïve café 漢字 😀 quotes \" tabs\t".split(" ")  # noqa: SIM905

    def text(size: int) -> str:
        out: list[str] = []
        length = 0
        while length < size:
            word = rng.choice(words)
            out.append(word)
            length += len(word) + 1
        return " ".join(out)[:size]

    program: Program = [["model_change", MODEL_PROVIDER, MODEL_ID], ["thinking", "medium"]]
    clock = 1_768_000_000_000
    for turn in range(turns):
        clock += 1000
        program.append(["message", {"role": "user", "content": [{"type": "text", "text": text(300)}],
                                    "timestamp": clock}])
        for step in range(rng.randint(1, 4)):
            tool = rng.choice(["read", "edit", "write", "bash"])
            args: dict[str, Any] = {"command": "ls -la"} if tool == "bash" else {"path": f"src/m{turn % 37}.py"}
            if tool == "edit":
                args["edits"] = [{"oldText": text(40), "newText": text(60)}]
            call_id = f"toolu_{turn}_{step}"
            program.append(["message", {"role": "assistant", "content": [
                {"type": "thinking", "thinking": text(400), "thinkingSignature": "sig"},
                {"type": "toolCall", "id": call_id, "name": tool, "arguments": args}],
                "api": "anthropic-messages", "provider": MODEL_PROVIDER, "model": MODEL_ID,
                "usage": _usage(rng.randint(1000, 90_000)), "stopReason": "toolUse", "timestamp": clock}])
            program.append(["message", {"role": "toolResult", "toolCallId": call_id, "toolName": tool,
                                        "content": [{"type": "text", "text": text(rng.randint(3000, 8000))}],
                                        "isError": False, "timestamp": clock}])
        program.append(["message", {"role": "assistant", "content": [{"type": "text", "text": text(500)}],
                                    "api": "anthropic-messages", "provider": MODEL_PROVIDER, "model": MODEL_ID,
                                    "usage": _usage(rng.randint(1000, 90_000)), "stopReason": "stop",
                                    "timestamp": clock}])
        # every op so far appended one entry: ``len(program) - k`` picks the entry k back
        if turn in (turns // 4, turns // 2, 3 * turns // 4):
            program.append(["compaction", len(program) - 12, text(2000), 150_000,
                            {"readFiles": ["src/m1.py"], "modifiedFiles": ["src/m2.py"]}, None])
        if turn == turns // 3:
            program.append(["custom_message", "note", "remember the plan", True, None])
        if turn == 2 * turns // 3:
            program.append(["label", len(program) - 3, "checkpoint"])
        if turn == 5 * turns // 8:
            program.append(["branch", len(program) - 20])  # the rest continues on a side branch
            program.append(["message", {"role": "user", "content": "let us try another way", "timestamp": clock}])
    return program
