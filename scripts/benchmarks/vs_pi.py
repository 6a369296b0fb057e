"""rpcd against real Pi 0.85.0, side by side: every measure both share, interleaved in one run.

Each measure runs ``PASSES`` passes; a pass runs rpcd and ``pi --mode rpc`` one after the other
(the order alternates between passes, so neither always sees a warmer machine); the table shows
the medians and their ratio rpcd / Pi (for rates: higher is better). The machine's load average
is printed before and after each measure.

Measures (rpcd | Pi):

* ``spawn``: spawn ``python -m rpcd`` -> ``initialize`` -> ``getState`` answered |
  spawn ``pi --mode rpc`` -> ``get_state`` answered;
* ``exit``: spawn -> first answer -> end of input -> process gone (and the last step alone);
* ``resume``: ``resume`` | ``switch_session`` of one Pi-shaped session (``store.generate_session``,
  ``--full`` 20,000 entries / ~45 MB); VmRSS after it; the exit after it;
* ``events``: one faux turn of N ``text_delta`` chunks of 16 characters, prompt sent -> ``agent_end``
  read (rpcd's faux provider from ``RPCD_FAUX_SCRIPT`` | pi-ai's faux provider streaming the same
  chunks without delay, ``_faux_stream_pi.mjs``); deltas read (fewer = merged);
* ``getstate``: ``getState`` and ``ping`` | ``get_state`` round trip p50, sequential after warm-up;
  plus a bare Python NDJSON echo loop (the floor of Python + a pipe); the three processes run side by
  side in each pass and take their round trips in blocks, in turn;
* ``replacements``: N cycles of ``newSession`` -> ``resume`` -> ``fork`` | ``new_session`` ->
  ``switch_session`` -> ``fork`` of one small Pi-shaped session (3 replacements a cycle; ``--full``
  N = 2,000, else 200; ``--cycles N`` sets it, e.g. the issue's 10,000): replacements/s, and VmRSS
  after 30 warm-up cycles vs after N;
* ``turn`` and ``tools`` (``_vs_turns.py``): real turns against a loopback OpenAI-compatible model
  replaying recorded-shape streams (``_loopback.py``, the same bytes to both): prompt -> first text
  delta, last SSE byte -> ``agent_end``; one prompt of 200 tool calls on a generated 10,000-file tree;
  prompts after the resume of the large session (``bigturn``);
* ``acp`` (``_vs_acp.py``): ``rpcd acp`` against ``pi-acp`` + ``pi``: spawn -> ``session/new``, prompts;
* ``pirpc`` (``_vs_pirpc.py``): ``rpcd --mode rpc`` (Pi's own wire) against ``pi --mode rpc``, the same
  lines: ``get_state`` round trip p50/p90, streamed ``message_update`` events/s of one faux turn;
* ``continue`` and ``resume-big`` (``_vs_sessions.py``): the most-recent lookup over 1,000 sessions, the
  start with ``--continue``; the 200,000-entry (~450 MB) resume beside the 20,000-entry one (``--big``).

Beside wall times, CPU times of the process tree (``_rpc.cpu_ms``: every thread's run time from
``/proc``) say what each side spent, which moves far less than wall time on a shared machine.

The reader is the same for both (a thread ``os.read``-ing 1 MiB chunks and ``orjson``-parsing
each line), so the client is never what limits a rate. Both run with a throw-away ``HOME`` and
agent dir, offline, no telemetry. ``--full`` uses the issue's sizes (50,000 chunks, 20,000-entry
session, 5 passes); the default is CI-sized.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from benchmarks import _vs_acp, _vs_pirpc, _vs_sessions, _vs_turns
from benchmarks._harness import Measurement, percentile
from benchmarks._rpc import rss_kb
from benchmarks._sides import (
    Context,
    Proc,
    Samples,
    Side,
    StreamedTurn,
    clean_env,
    interleave,
    load,
    oracle,
    rpcd_request,
    running,
    side_for,
)
from benchmarks.store import generate_session

HERE = Path(__file__).resolve().parent
PI_STREAM_EXTENSION = HERE / "_faux_stream_pi.mjs"
CHUNK = "0123456789abcdef"

_FLOOR = (
    "import sys, json\nline = sys.stdin.readline()\n"
    "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': json.loads(line)['id'], 'result': None}) + '\\n')\n"
    "sys.stdout.flush()\nsys.stdin.read()\n"
)
"""The floor of Python: a bare interpreter (``-I``, no site-packages) answering one NDJSON line."""


def measure_spawn(ctx: Context) -> Samples:
    def one(which: str) -> dict[str, float]:
        side = side_for(ctx, which)
        with running(side) as proc:
            proc.ready()
            answered = time.perf_counter() - proc.started
            cpu = proc.cpu_ms()
        result = {"spawn_ms": answered * 1000, "spawn_cpu_ms": cpu}
        if which == "rpcd":  # the floor runs beside rpcd's pass
            home, project = ctx.home("floor")
            floor = Side("floor", [sys.executable, "-I", "-c", _FLOOR], clean_env(home, {}), str(project), rpcd_request,
                         lambda m: m.get("id"), lambda m: None)
            with running(floor) as proc:
                proc.call("ping")
                result["floor_ms"] = (time.perf_counter() - proc.started) * 1000
        return result

    return interleave(ctx, one)


def measure_exit(ctx: Context) -> Samples:
    def one(which: str) -> dict[str, float]:
        side = side_for(ctx, which)
        proc = Proc(side)
        proc.ready()
        after_close = proc.close()
        return {"whole_ms": (time.perf_counter() - proc.started) * 1000, "exit_ms": after_close * 1000,
                "life_cpu_ms": proc.life_cpu_ms}

    return interleave(ctx, one)


def measure_resume(ctx: Context) -> Samples:
    path = str(ctx.session())

    def one(which: str) -> dict[str, float]:
        side = side_for(ctx, which)
        proc = Proc(side)
        proc.ready()
        rss_before = rss_kb(proc.proc.pid)
        started = time.perf_counter()
        proc.call("resume", {"sessionPath": path})
        elapsed = time.perf_counter() - started
        rss_after = rss_kb(proc.proc.pid)
        state = proc.call("getState")
        after_close = proc.close()
        data = state.get("result") or state.get("data") or {}
        if not data.get("messageCount"):
            raise AssertionError(f"{which}: resumed session has no messages: {data}")
        return {"resume_ms": elapsed * 1000, "rss_mb": rss_after / 1024, "rss_growth_mb": (rss_after - rss_before)
                / 1024, "exit_ms": after_close * 1000, "messages": float(data["messageCount"])}

    return interleave(ctx, one)


def measure_events(ctx: Context) -> Samples:
    chunks = ctx.chunks
    script = ctx.tmp / "events-script.json"
    script.write_bytes(orjson.dumps({"steps": [{"text": CHUNK, "repeat": chunks}], "chunkSize": len(CHUNK)}))

    def one(which: str) -> dict[str, float]:
        turn = StreamedTurn()
        side = side_for(ctx, which, rpcd_args=["--in-memory"], rpcd_env={"RPCD_FAUX_SCRIPT": str(script)},
                     pi_args=["--no-session", "-e", str(PI_STREAM_EXTENSION), "--provider", "faux", "--model",
                              "faux-1"],
                     pi_env={"RPCD_BENCH_CHUNK": CHUNK, "RPCD_BENCH_CHUNKS": str(chunks)})
        with running(side, turn.on_event) as proc:
            proc.ready()
            started = time.perf_counter()
            params = {"text": "go"} if which == "rpcd" else {"message": "go"}
            proc.send("prompt", params)
            elapsed = turn.wait(which, started, CHUNK * chunks)
        deltas = turn.deltas
        return {"events_per_s": len(deltas) / elapsed, "deltas": float(len(deltas)), "turn_ms": elapsed * 1000}

    return interleave(ctx, one)


_ECHO = ("import sys, json\nfor line in sys.stdin:\n    req = json.loads(line)\n"
         "    sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': req['id'], 'result': None}) + '\\n')\n"
         "    sys.stdout.flush()\n")


def _round_trips(proc: Proc, method: str, count: int, warmup: int = 200) -> list[float]:
    times: list[float] = []
    for index in range(count + warmup):
        started = time.perf_counter()
        proc.call(method)
        if index >= warmup:
            times.append((time.perf_counter() - started) * 1e6)
    return times


GETSTATE_BLOCKS = 10
"""``getstate``: each pass's round trips of every series are taken in this many blocks, in turn."""


def measure_getstate(ctx: Context) -> Samples:
    """rpcd's ``getState`` and ``ping``, Pi's ``get_state`` and the bare echo's ``ping``: in each pass the
    three processes run side by side and the four series take their round trips in ``GETSTATE_BLOCKS``
    blocks in turn (the order rotating), so a change of the shared machine's pace within a pass — which
    moves a round trip by half on this machine — falls on every series alike; p50 over each series' pass."""
    count = 5_000 if ctx.full else 1_000
    per_block = max(1, count // GETSTATE_BLOCKS)
    samples: Samples = {side: {} for side in ctx.sides}
    for index in range(ctx.passes):
        with contextlib.ExitStack() as stack:
            series: list[tuple[str, str, Proc, str]] = []
            for which in (ctx.sides if index % 2 == 0 else ctx.sides[::-1]):
                proc = stack.enter_context(running(side_for(ctx, which)))
                proc.ready()
                series.append((which, "getstate_us", proc, "getState"))
                if which == "rpcd":  # the bare echo loop runs beside rpcd's: the floor of Python + a pipe
                    series.append((which, "ping_us", proc, "ping"))
                    home, project = ctx.home("echo")
                    echo = Side("echo", [sys.executable, "-c", _ECHO], clean_env(home, {}), str(project),
                                rpcd_request, lambda m: m.get("id"), lambda m: None)
                    series.append((which, "echo_us", stack.enter_context(running(echo)), "ping"))
            times: dict[tuple[str, str], list[float]] = {(which, key): [] for which, key, _, _ in series}
            for _, _, proc, method in series:
                _round_trips(proc, method, 0)  # the warm-up
            for block in range(GETSTATE_BLOCKS):
                turn = (block + index) % len(series)
                for which, key, proc, method in series[turn:] + series[:turn]:
                    times[which, key] += _round_trips(proc, method, per_block, warmup=0)
        for (which, key), values in times.items():
            samples[which].setdefault(key, []).append(percentile(values, 50))
    for side in samples.values():
        if "getstate_us" in side and "ping_us" not in side:
            side["ping_us"] = side["getstate_us"]  # Pi has no ping: its get_state stands for it
    return samples


def measure_replacements(ctx: Context) -> Samples:
    cycles = ctx.cycles or (2_000 if ctx.full else 200)
    warmup = 30
    source = ctx.tmp / "cycle-source.jsonl"
    if not source.exists():
        (ctx.tmp / "cycle-project").mkdir(exist_ok=True)
        generate_session(source, 24, cwd=str(ctx.tmp / "cycle-project"))
    first_user = next(orjson.loads(line)["id"] for line in source.read_bytes().splitlines()[1:]
                      if orjson.loads(line).get("message", {}).get("role") == "user")

    def cycle(proc: Proc) -> None:
        proc.call("newSession")
        proc.call("resume", {"sessionPath": str(source)})
        proc.call("fork", {"entryId": first_user})

    def one(which: str) -> dict[str, float]:
        side = side_for(ctx, which)
        with running(side) as proc:
            proc.ready()
            for _ in range(warmup):
                cycle(proc)
            rss_warm = rss_kb(proc.proc.pid)
            started = time.perf_counter()
            for _ in range(cycles):
                cycle(proc)
            elapsed = time.perf_counter() - started
            rss_end = rss_kb(proc.proc.pid)
        return {"ops_per_s": 3 * cycles / elapsed, "rss_growth_mb": (rss_end - rss_warm) / 1024,
                "cycles": float(cycles)}

    return interleave(ctx, one)


# -- rows ------------------------------------------------------------------------------------------------


def _med(samples: Samples, side: str, key: str) -> float:
    return statistics.median(samples[side][key])


def _spread(samples: Samples, side: str, key: str, unit: str) -> str:
    values = samples[side][key]
    return f"{side} {min(values):.0f}-{max(values):.0f} {unit}"


def rows_for(name: str, samples: Samples, ctx: Context, loads: str) -> list[Measurement]:
    passes = f"median of {ctx.passes} interleaved passes; {loads}"
    if name == "spawn":
        return [Measurement("spawn -> first session answer (getState)", _med(samples, "rpcd", "spawn_ms"), "ms",
                            "pi --mode rpc -> get_state", _med(samples, "pi", "spawn_ms"),
                            note=f"{passes}; {_spread(samples, 'rpcd', 'spawn_ms', 'ms')}, "
                                 f"{_spread(samples, 'pi', 'spawn_ms', 'ms')}"),
                Measurement("  CPU time to that answer (all threads)", _med(samples, "rpcd", "spawn_cpu_ms"), "ms",
                            "Pi, same", _med(samples, "pi", "spawn_cpu_ms")),
                Measurement("  floor: bare python -I answering one NDJSON line",
                            _med(samples, "rpcd", "floor_ms"), "ms", "pi --mode rpc -> get_state",
                            _med(samples, "pi", "spawn_ms"))]
    if name == "exit":
        return [
            Measurement("whole process: spawn -> answer -> end of input -> exit", _med(samples, "rpcd", "whole_ms"),
                        "ms", "Pi, same", _med(samples, "pi", "whole_ms"), note=passes),
            Measurement("  of which: end of input -> exit", _med(samples, "rpcd", "exit_ms"), "ms", "Pi, same",
                        _med(samples, "pi", "exit_ms"), note=passes),
            Measurement("  CPU time of the whole process", _med(samples, "rpcd", "life_cpu_ms"), "ms", "Pi, same",
                        _med(samples, "pi", "life_cpu_ms")),
        ]
    if name == "resume":
        size = os.path.getsize(ctx.session()) / 1e6
        label = f"{20_000 if ctx.full else 2_000} entries, {size:.1f} MB"
        return [
            Measurement(f"resume ({label})", _med(samples, "rpcd", "resume_ms"), "ms", "Pi switch_session",
                        _med(samples, "pi", "resume_ms"),
                        note=f"{passes}; {int(_med(samples, 'rpcd', 'messages'))} messages in context"),
            Measurement("  VmRSS after the resume", _med(samples, "rpcd", "rss_mb"), "MB", "Pi, same",
                        _med(samples, "pi", "rss_mb"),
                        note=f"growth by the resume: rpcd +{_med(samples, 'rpcd', 'rss_growth_mb'):.0f} MB, "
                             f"Pi +{_med(samples, 'pi', 'rss_growth_mb'):.0f} MB"),
            Measurement("  end of input -> exit after it", _med(samples, "rpcd", "exit_ms"), "ms", "Pi, same",
                        _med(samples, "pi", "exit_ms")),
        ]
    if name == "events":
        return [Measurement(f"streamed message_update events/s ({ctx.chunks} deltas)",
                            _med(samples, "rpcd", "events_per_s"), "ev/s", "Pi, same faux turn",
                            _med(samples, "pi", "events_per_s"), higher_is_better=True,
                            note=f"{passes}; deltas read: rpcd {int(_med(samples, 'rpcd', 'deltas'))}, "
                                 f"Pi {int(_med(samples, 'pi', 'deltas'))} (fewer = merged); text complete")]
    if name == "getstate":
        return [
            Measurement("getState round trip p50", _med(samples, "rpcd", "getstate_us"), "us", "Pi get_state p50",
                        _med(samples, "pi", "getstate_us"), note=passes),
            Measurement("ping round trip p50", _med(samples, "rpcd", "ping_us"), "us", "Pi get_state p50",
                        _med(samples, "pi", "getstate_us")),
            Measurement("ping round trip p50 (vs Python)", _med(samples, "rpcd", "ping_us"), "us",
                        "bare Python NDJSON echo loop p50", _med(samples, "rpcd", "echo_us")),
        ]
    if name == "replacements":
        cycles = int(_med(samples, "rpcd", "cycles"))
        return [
            Measurement(f"replacements/s ({cycles} cycles newSession -> resume -> fork)",
                        _med(samples, "rpcd", "ops_per_s"), "ops/s", "Pi new_session -> switch_session -> fork",
                        _med(samples, "pi", "ops_per_s"), higher_is_better=True, note=passes),
            Measurement(f"  VmRSS growth over {cycles} cycles (after 30 warm-up)",
                        _med(samples, "rpcd", "rss_growth_mb"), "MB", "Pi, same",
                        _med(samples, "pi", "rss_growth_mb")),
        ]
    raise ValueError(name)


RowsFunction = Callable[[Samples, Context, str], list[Measurement]]


def _rows(name: str) -> RowsFunction:
    return lambda samples, ctx, loads: rows_for(name, samples, ctx, loads)


def _passes(rows: RowsFunction) -> RowsFunction:
    return lambda samples, ctx, loads: rows(samples, ctx, f"median of {ctx.passes} interleaved passes; {loads}")


MEASURES: dict[str, tuple[Callable[[Context], Samples], RowsFunction]] = {
    "spawn": (measure_spawn, _rows("spawn")),
    "exit": (measure_exit, _rows("exit")),
    "getstate": (measure_getstate, _rows("getstate")),
    "turn": (_vs_turns.measure_turn, _passes(_vs_turns.rows_turn)),
    "tools": (_vs_turns.measure_tools, _passes(_vs_turns.rows_tools)),
    "bigturn": (_vs_turns.measure_big_turn, _passes(_vs_turns.rows_big_turn)),
    "acp": (_vs_acp.measure_acp, _passes(_vs_acp.rows_acp)),
    "pirpc": (_vs_pirpc.measure_pirpc, _passes(_vs_pirpc.rows_pirpc)),
    "resume": (measure_resume, _rows("resume")),
    "resume-big": (_vs_sessions.measure_resume_big, _passes(_vs_sessions.rows_resume_big)),
    "continue": (_vs_sessions.measure_continue, _passes(_vs_sessions.rows_continue)),
    "events": (measure_events, _rows("events")),
    "replacements": (measure_replacements, _rows("replacements")),
}
"""Every measure: what it samples, and its rows. ``resume-big`` runs only when named or with ``big``."""
DEFAULT_SKIPPED = ("resume-big",)


def run(full: bool, only: Sequence[str] | None = None, passes: int | None = None,
        cycles: int | None = None, big: bool = False) -> list[Measurement]:
    found = oracle()
    rows: list[Measurement] = []
    names = list(only or [name for name in MEASURES if big or name not in DEFAULT_SKIPPED])
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-vs-pi-") as tmp:
        ctx = Context(full=full, tmp=Path(tmp), oracle=found, passes=passes or (5 if full else 3),
                      chunks=50_000 if full else 5_000, cycles=cycles, big=big)
        for name in names:
            before = load()
            print(f"[bench] vs-pi {name} ({before}) ...", file=sys.stderr, flush=True)
            measure, rows_of = MEASURES[name]
            samples = measure(ctx)
            rows += rows_of(samples, ctx, f"{before} -> {load()}")
    return rows


def profile(name: str, full: bool, out_dir: Path, top: int = 35, cycles: int | None = None) -> str:
    """Run measure ``name`` once, rpcd side only, with the daemon under cProfile; the top functions.

    The daemon writes its profile when it exits normally (its input ends), so every measure can be
    profiled the same way; ``pstats`` reads it back sorted by cumulative and by own time.
    """
    import io
    import pstats

    out = out_dir / f"rpcd-{name}.prof"
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-profile-") as tmp:
        ctx = Context(full=full, tmp=Path(tmp), oracle=oracle(), passes=1, chunks=50_000 if full else 5_000,
                      sides=("rpcd",), python=[sys.executable, "-P", "-m", "cProfile", "-o", str(out)], cycles=cycles)
        if name == "resume":
            ctx.session()  # generated before the profiled process starts
        MEASURES[name][0](ctx)
    text = io.StringIO()
    stats = pstats.Stats(str(out), stream=text)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return f"profile written to {out} (open with `python -m pstats {out}`)\n" + text.getvalue()
