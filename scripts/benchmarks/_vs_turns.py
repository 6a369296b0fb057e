"""``--vs-pi turn`` and ``--vs-pi tools``: what a user feels in a real turn, against the same loopback
OpenAI-compatible model (``_loopback.py``: the same bytes to both sides, chosen by request index).

* ``turn``: ``TURNS`` prompts in one process (the first pays the first model request: imports, the
  HTTP connection; the others are warm), each answered by a stream of ``DELTAS`` text deltas paced
  ``PACE_S`` apart. Per turn: prompt sent -> first ``text_delta`` event read; the last SSE byte sent
  -> ``agent_end`` read (and -> rpcd's ``prompt`` answer, which comes with the end of the turn; Pi
  answers ``prompt`` on acceptance); the CPU time the process used for the turn. Breakdown of the
  first delta: prompt -> the request's body at the model, -> its first byte sent, -> the delta read.
  Then a second process per side whose one prompt is sent ``IDLE_S`` after its first answer (a user
  types after the editor has started it): the first turn once the process had a moment to itself.
* ``bigturn``: ``BIG_TURNS`` prompts after a resume of the run's large Pi-shaped session
  (``Context.session``: 20,000 entries with ``--vs-pi``, each side its own copy): what a turn costs
  in a long session, where the context after its latest compaction is ~2,200 messages (a ~4.7 MB
  request body) and every prompt's compaction check asks for the branch's latest compaction twice.
  Prompt sent -> the request's body at the model, -> ``agent_end`` read; each answered by a short
  unpaced stream.
* ``tools``: one prompt; the model answers ``TOOL_CALLS`` rounds with one tool call each (read / grep
  / find / ls cycling over a generated 10,000-file tree, ``_workload.py``, the same seed for both),
  then a text answer. Wall time prompt sent -> ``agent_end``; CPU of the process tree (its ``rg`` /
  ``fd`` children included); every call ran (``tool_execution_end`` events, errors counted).

Both sides run with ``--provider loop --model loop-1`` over ``models.json`` in their agent dir,
persist their session as users' do, and (``tools``) ``--tools read,grep,find,ls``. Pi's ``grep`` and
``find`` run ``rg`` and ``fd`` from ``PATH`` (rg: the same binary rpcd runs; fd: Debian's
``fd-find`` through the ``tools`` section's shim, since Pi would download its own).
"""

from __future__ import annotations

import os
import shutil
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks._harness import Measurement
from benchmarks._loopback import (
    MODEL_ID,
    PROVIDER,
    LoopbackModel,
    models_json,
    text_deltas,
    text_stream,
    tool_call_stream,
)
from benchmarks._sides import TIMEOUT_S, Context, Samples, interleave, running, side_for
from benchmarks._workload import generate_tree, tool_calls

TURNS = 6
DELTAS = 200
PACE_S = 0.002
IDLE_S = 0.5
"""The ``idle`` row: the first prompt of a process sent this long after its first answer."""
BIG_TURNS = 4
BIG_DELTAS = 20
TOOL_CALLS = 200
TOOLS = "read,grep,find,ls"


def _agent_files(home: Path, base_url: str) -> None:
    (home / "agent" / "models.json").write_text(orjson.dumps(models_json(base_url)).decode())


def _model_args() -> list[str]:
    return ["--provider", PROVIDER, "--model", MODEL_ID]


class _Turn:
    """Timestamps of one turn, filled from the reader thread."""

    def __init__(self) -> None:
        self.first_delta = 0.0
        self.ended = 0.0
        self.done = threading.Event()
        self.text: list[str] = []
        self.tool_ends = 0
        self.tool_errors = 0


class _Events:
    def __init__(self) -> None:
        self.turn = _Turn()

    def __call__(self, event: dict[str, Any], now: float) -> None:
        turn = self.turn
        kind = event.get("type")
        if kind == "message_update":
            inner = event.get("assistantMessageEvent") or {}
            if inner.get("type") == "text_delta":
                if not turn.first_delta:
                    turn.first_delta = now
                turn.text.append(inner["delta"])
        elif kind == "tool_execution_end":
            turn.tool_ends += 1
            turn.tool_errors += bool(event.get("isError"))
        elif kind == "agent_end":
            turn.ended = now
            turn.done.set()


def _prompt(proc: Any, which: str, text: str) -> str:
    return proc.send("prompt", {"text": text} if which == "rpcd" else {"message": text})


def _text_turn(proc: Any, which: str, events: _Events, text: str, expected: str, what: str) -> tuple[_Turn, float, str]:
    """One prompt, until its ``agent_end`` and its answer: the turn's marks, when the prompt was sent,
    its request id. The turn must have streamed ``expected``."""
    events.turn = turn = _Turn()
    sent = time.perf_counter()
    msg_id = _prompt(proc, which, text)
    if not turn.done.wait(TIMEOUT_S):
        raise RuntimeError(f"{which}: {what} never ended")
    proc.wait(msg_id)
    if "".join(turn.text) != expected:
        raise AssertionError(f"{which}: {what} streamed {len(turn.text)} deltas, not the text")
    return turn, sent, msg_id


def measure_turn(ctx: Context) -> Samples:
    deltas = text_deltas(DELTAS)
    expected = "".join(deltas)
    stream = text_stream(deltas)
    model = LoopbackModel(lambda index, body: stream, pace_s=PACE_S)

    def one(which: str) -> dict[str, float]:
        home = ctx.home(f"turn-{which}")
        _agent_files(home[0], model.base_url)
        model.reset()
        events = _Events()
        side = side_for(ctx, which, *_model_args(), home=home)
        samples: dict[str, list[float]] = {}
        turn_in(side, events, samples, TURNS, "first")
        if ctx.python is not None:  # --profile: the profile is the multi-turn process's (one output file)
            return {key: statistics.median(values) for key, values in samples.items()}
        # a process whose first prompt comes after a moment of idleness, as a user's does
        home = ctx.home(f"turn-idle-{which}")
        _agent_files(home[0], model.base_url)
        model.reset()
        turn_in(side_for(ctx, which, *_model_args(), home=home), events, samples, 1, "idle", pause=IDLE_S)
        return {key: statistics.median(values) for key, values in samples.items()}

    def turn_in(side: Any, events: _Events, samples: dict[str, list[float]], turns: int, first: str,
                pause: float = 0.0) -> None:
        which = side.name
        with running(side, events) as proc:
            proc.ready()
            time.sleep(pause)
            for number in range(turns):
                cpu_before = proc.cpu_ms()
                turn, sent, msg_id = _text_turn(proc, which, events, f"Tell me about the session file, part {number}.",
                                                expected, f"turn {number}")
                answer_at = proc.answered_at.get(msg_id, 0.0)
                served = model.served[-1]
                done_at = max(turn.ended, answer_at) if which == "rpcd" else turn.ended
                phase = first if number == 0 else "warm"
                for key, value in (
                    ("first_delta_ms", (turn.first_delta - sent) * 1000),
                    ("to_request_ms", (served.received - sent) * 1000),
                    ("request_to_first_byte_ms", (served.first_byte - served.received) * 1000),
                    ("first_byte_to_delta_ms", (turn.first_delta - served.first_byte) * 1000),
                    ("tail_agent_end_ms", (turn.ended - served.last_byte) * 1000),
                    ("tail_done_ms", (done_at - served.last_byte) * 1000),
                    ("turn_cpu_ms", proc.cpu_ms() - cpu_before),
                    ("request_kb", served.body_bytes / 1024),
                ):
                    samples.setdefault(f"{phase}:{key}", []).append(value)

    try:
        return interleave(ctx, one)
    finally:
        model.close()


def measure_big_turn(ctx: Context) -> Samples:
    source = ctx.session()
    deltas = text_deltas(BIG_DELTAS)
    expected = "".join(deltas)
    stream = text_stream(deltas)
    model = LoopbackModel(lambda index, body: stream)

    def one(which: str) -> dict[str, float]:
        home = ctx.home(f"bigturn-{which}")
        _agent_files(home[0], model.base_url)
        copy = home[0] / "resumed.jsonl"
        shutil.copyfile(source, copy)
        model.reset()
        events = _Events()
        samples: dict[str, list[float]] = {}
        with running(side_for(ctx, which, *_model_args(), home=home), events) as proc:
            proc.ready()
            proc.call("resume", {"sessionPath": str(copy)})
            for number in range(BIG_TURNS):
                text = f"And one more thing about the session file, part {number}."
                turn, sent, _ = _text_turn(proc, which, events, text, expected, f"turn {number} on the resumed session")
                served = model.served[-1]
                phase = "first" if number == 0 else "warm"
                for key, value in (
                    ("end_ms", (turn.ended - sent) * 1000),
                    ("to_request_ms", (served.received - sent) * 1000),
                    ("request_mb", served.body_bytes / 1e6),
                ):
                    samples.setdefault(f"{phase}:{key}", []).append(value)
        return {key: statistics.median(values) for key, values in samples.items()}

    try:
        return interleave(ctx, one)
    finally:
        model.close()


def rows_big_turn(samples: Samples, ctx: Context, passes: str) -> list[Measurement]:
    def both(key: str, unit: str, digits: int = 0) -> str:
        return f"rpcd {_med(samples, 'rpcd', key):.{digits}f} {unit}, Pi {_med(samples, 'pi', key):.{digits}f} {unit}"

    entries = 20_000 if ctx.full else 2_000
    return [
        Measurement(f"turn on a resumed {entries:,}-entry session: prompt -> agent_end (warm)",
                    _med(samples, "rpcd", "warm:end_ms"), "ms", "Pi, same file and stream",
                    _med(samples, "pi", "warm:end_ms"),
                    note=f"{passes}; prompt -> request at the model: {both('warm:to_request_ms', 'ms')}; "
                         f"request body {both('warm:request_mb', 'MB', 2)}; "
                         f"first turn after the resume: {both('first:end_ms', 'ms')}"),
    ]


def _pi_tool_path(ctx: Context) -> str:
    """``PATH`` for Pi's grep/find: ``rg`` (the one rpcd runs) and ``fd`` (Debian's, shimmed as fd >= 9)."""
    from rpcd.tools.binaries import ripgrep_path
    from tests.pi_compat.oracle import ensure_fd

    shim = ctx.tmp / "pi-tools-bin"
    if not shim.exists():
        shim.mkdir()
        rg = ripgrep_path()
        if rg:
            (shim / "rg").symlink_to(rg)
        fd = ensure_fd()
        if fd is None:
            raise RuntimeError("no fd for Pi's find tool (Debian's fd-find could not be had)")
        (shim / "fd").write_text(
            "#!/bin/sh\nfor a; do shift; [ \"$a\" = --no-require-git ] || set -- \"$@\" \"$a\"; done\n"
            f'exec {fd} --exclude .git "$@"\n')
        (shim / "fd").chmod(0o755)
    return f"{shim}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"


def measure_tools(ctx: Context) -> Samples:
    if "tree" not in ctx.cache:
        root = ctx.tmp / "tree"
        ctx.cache["tree"] = (root, generate_tree(root))
    root, files = ctx.cache["tree"]
    calls = tool_calls(files, TOOL_CALLS)
    final = text_stream(text_deltas(20))
    streams = [tool_call_stream(f"call_{n:03d}", name, args) for n, (name, args) in enumerate(calls)]
    model = LoopbackModel(lambda index, body: streams[index] if index < len(streams) else final)
    pi_path = _pi_tool_path(ctx)

    def one(which: str) -> dict[str, float]:
        home, _ = ctx.home(f"tools-{which}")
        _agent_files(home, model.base_url)
        model.reset()
        events = _Events()
        tools_flag = ["-t", TOOLS] if which == "rpcd" else ["--tools", TOOLS]
        side = side_for(ctx, which, *_model_args(), *tools_flag, home=(home, root),
                        pi_env={"PATH": pi_path})
        with running(side, events) as proc:
            proc.ready()
            turn = events.turn
            cpu_before = proc.cpu_ms()
            sent = time.perf_counter()
            msg_id = _prompt(proc, which, "Explore the tree and tell me what the packages do.")
            if not turn.done.wait(TIMEOUT_S * 4):
                raise RuntimeError(f"{which}: the tool-heavy turn never ended")
            proc.wait(msg_id)
            elapsed = turn.ended - sent
            cpu = proc.cpu_ms() - cpu_before
        served = list(model.served)
        if turn.tool_ends != len(calls) or len(served) != len(calls) + 1:
            raise AssertionError(f"{which}: {turn.tool_ends} tool ends, {len(served)} model requests "
                                 f"(expected {len(calls)} and {len(calls) + 1})")
        model_time = sum(s.last_byte - s.received for s in served)
        return {"wall_ms": elapsed * 1000, "cpu_ms": cpu, "tool_errors": float(turn.tool_errors),
                "client_per_round_ms": (elapsed - model_time) * 1000 / len(served),
                "last_request_kb": served[-1].body_bytes / 1024}

    try:
        return interleave(ctx, one)
    finally:
        model.close()


def _med(samples: Samples, side: str, key: str) -> float:
    return statistics.median(samples[side][key])


def rows_turn(samples: Samples, ctx: Context, passes: str) -> list[Measurement]:
    def row(name: str, key: str, baseline: str, note: str = "") -> Measurement:
        return Measurement(name, _med(samples, "rpcd", key), "ms", baseline, _med(samples, "pi", key), note=note)

    def breakdown(phase: str) -> str:
        parts = ("to_request_ms", "request_to_first_byte_ms", "first_byte_to_delta_ms")
        return "; ".join(f"{side}: " + " + ".join(f"{_med(samples, side, f'{phase}:{p}'):.1f}" for p in parts)
                         for side in ("rpcd", "pi")) + " ms (prompt -> request at the model -> first byte -> delta)"

    return [
        row("turn: prompt -> first text delta (first turn of the process)", "first:first_delta_ms",
            "Pi, same loopback stream", f"{passes}; {breakdown('first')}"),
        row(f"turn: prompt -> first text delta (first turn, sent {IDLE_S:g} s after the first answer)",
            "idle:first_delta_ms", "Pi, same", f"{breakdown('idle')}; -> prompt answered: rpcd "
            f"{_med(samples, 'rpcd', 'idle:tail_done_ms'):.1f} ms, Pi {_med(samples, 'pi', 'idle:tail_done_ms'):.1f} "
            "ms after the last SSE byte"),
        row("turn: prompt -> first text delta (warm turns)", "warm:first_delta_ms", "Pi, same",
            f"{breakdown('warm')}; request body rpcd {_med(samples, 'rpcd', 'warm:request_kb'):.1f} KB, "
            f"Pi {_med(samples, 'pi', 'warm:request_kb'):.1f} KB"),
        row("turn: last SSE byte -> agent_end (warm)", "warm:tail_agent_end_ms", "Pi, same",
            f"first turn: rpcd {_med(samples, 'rpcd', 'first:tail_agent_end_ms'):.1f} ms, "
            f"Pi {_med(samples, 'pi', 'first:tail_agent_end_ms'):.1f} ms"),
        row("turn: last SSE byte -> prompt answered (rpcd) / agent_end (Pi), warm", "warm:tail_done_ms",
            "Pi agent_end"),
        row(f"turn: CPU time of one warm turn ({DELTAS} deltas)", "warm:turn_cpu_ms", "Pi, same",
            f"first turn: rpcd {_med(samples, 'rpcd', 'first:turn_cpu_ms'):.0f} ms, "
            f"Pi {_med(samples, 'pi', 'first:turn_cpu_ms'):.0f} ms"),
    ]


def rows_tools(samples: Samples, ctx: Context, passes: str) -> list[Measurement]:
    errors = (f"tool errors: rpcd {_med(samples, 'rpcd', 'tool_errors'):.0f}, "
              f"Pi {_med(samples, 'pi', 'tool_errors'):.0f}")
    return [
        Measurement(f"tool-heavy run: {TOOL_CALLS} calls ({TOOLS}) on 10,000 files, prompt -> agent_end",
                    _med(samples, "rpcd", "wall_ms"), "ms", "Pi, same calls", _med(samples, "pi", "wall_ms"),
                    note=f"{passes}; {errors}; last request body rpcd "
                         f"{_med(samples, 'rpcd', 'last_request_kb'):.0f} KB, "
                         f"Pi {_med(samples, 'pi', 'last_request_kb'):.0f} KB"),
        Measurement("  CPU time of that run (process tree: rg/fd included)", _med(samples, "rpcd", "cpu_ms"), "ms",
                    "Pi, same", _med(samples, "pi", "cpu_ms")),
        Measurement("  client-side time per model round (wall - model streaming) / rounds",
                    _med(samples, "rpcd", "client_per_round_ms"), "ms", "Pi, same",
                    _med(samples, "pi", "client_per_round_ms")),
    ]
