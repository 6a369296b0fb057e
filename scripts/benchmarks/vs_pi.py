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
  plus a bare Python NDJSON echo loop (the floor of Python + a pipe);
* ``replacements``: N cycles of ``newSession`` -> ``resume`` -> ``fork`` | ``new_session`` ->
  ``switch_session`` -> ``fork`` of one small Pi-shaped session (3 replacements a cycle; ``--full``
  N = 2,000, else 200; ``--cycles N`` sets it, e.g. the issue's 10,000): replacements/s, and VmRSS
  after 30 warm-up cycles vs after N.

The reader is the same for both (a thread ``os.read``-ing 1 MiB chunks and ``orjson``-parsing
each line), so the client is never what limits a rate. Both run with a throw-away ``HOME`` and
agent dir, offline, no telemetry. ``--full`` uses the issue's sizes (50,000 chunks, 20,000-entry
session, 5 passes); the default is CI-sized.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from benchmarks._harness import Measurement, percentile
from benchmarks._rpc import REPO, rss_kb
from benchmarks.store import generate_session

HERE = Path(__file__).resolve().parent
PI_STREAM_EXTENSION = HERE / "_faux_stream_pi.mjs"
CHUNK = "0123456789abcdef"
MEASURES = ("spawn", "exit", "resume", "events", "getstate", "replacements")
TIMEOUT_S = 300.0


def _oracle() -> Any:
    sys.path.insert(0, str(REPO))
    from tests.pi_compat.oracle import ensure_oracle

    return ensure_oracle()


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f} on {os.cpu_count()} cpus"


# -- one process speaking NDJSON -------------------------------------------------------------------


@dataclass
class Side:
    """How to spawn and speak to one implementation (rpcd's JSON-RPC or Pi's typed commands)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    request: Callable[[str, str, Mapping[str, Any]], dict[str, Any]]
    response_id: Callable[[dict[str, Any]], Any]
    event_of: Callable[[dict[str, Any]], dict[str, Any] | None]
    methods: dict[str, str] = field(default_factory=dict)


class Proc:
    def __init__(self, side: Side, on_event: Callable[[dict[str, Any], float], None] | None = None) -> None:
        self.side = side
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(side.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=side.env, cwd=side.cwd)
        self._cond = threading.Condition()
        self._responses: dict[Any, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._on_event = on_event
        self.eof = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        pending = b""
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            now = time.perf_counter()
            for line in lines:
                message = orjson.loads(line)
                msg_id = self.side.response_id(message)
                if msg_id is not None:
                    with self._cond:
                        self._responses[msg_id] = message
                        self._cond.notify_all()
                elif self._on_event is not None:
                    event = self.side.event_of(message)
                    if event is not None:
                        self._on_event(event, now)
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def send(self, method: str, params: Mapping[str, Any] | None = None) -> str:
        msg_id = f"b{next(self._ids)}"
        data = orjson.dumps(self.side.request(msg_id, self.side.methods.get(method, method), params or {})) + b"\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        return msg_id

    def wait(self, msg_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        with self._cond:
            while msg_id not in self._responses:
                if self.eof or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.side.name}: no answer to {msg_id} (eof={self.eof})")
                self._cond.wait(1.0)
            response = self._responses.pop(msg_id)
        if "error" in response or response.get("success") is False:
            raise RuntimeError(f"{self.side.name}: request {msg_id} failed: {response.get('error')}")
        return response

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.wait(self.send(method, params))

    def ready(self) -> None:
        """The first session answer: rpcd needs ``initialize`` first, Pi answers commands at once."""
        if self.side.name == "rpcd":
            self.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "bench"}})
        self.call("getState")

    def close(self) -> float:
        """End of input → the process is gone; returns that time in seconds."""
        started = time.perf_counter()
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"{self.side.name} did not exit within 60 s of its input closing") from None
        return time.perf_counter() - started


@contextlib.contextmanager
def running(side: Side, on_event: Callable[[dict[str, Any], float], None] | None = None) -> Iterator[Proc]:
    proc = Proc(side, on_event)
    try:
        yield proc
    finally:
        if proc.proc.poll() is None:
            proc.close()


def _rpcd_request(msg_id: str, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params:
        message["params"] = dict(params)
    return message


def _rpcd_event(message: dict[str, Any]) -> dict[str, Any] | None:
    if message.get("method") == "session/event":
        event: dict[str, Any] = message["params"]["event"]
        return event
    return None


def _pi_request(msg_id: str, kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": kind, "id": msg_id, **params}


def _pi_event(message: dict[str, Any]) -> dict[str, Any] | None:
    return None if message.get("type") in ("response", "extension_ui_request") else message


def _clean_env(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_"))}
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / "agent"), PI_OFFLINE="1", PI_TELEMETRY="0",
               NO_COLOR="1", RPCD_LOG_LEVEL="warning")
    env.update(extra)
    return env


def rpcd_side(home: Path, project: Path, *args: str, env: Mapping[str, str] | None = None,
              python: Sequence[str] | None = None) -> Side:
    full_env = _clean_env(home, env or {})
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    argv = [*(python or [sys.executable]), "-P", "-m", "rpcd", "--agent-dir", str(home / "agent"),
            "--cwd", str(project), *args]
    return Side("rpcd", argv, full_env, str(project), _rpcd_request, lambda m: m.get("id") if "method" not in m
                else None, _rpcd_event)


def pi_side(oracle: Any, home: Path, project: Path, *args: str, env: Mapping[str, str] | None = None) -> Side:
    cli = oracle.root / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
    full_env = _clean_env(home, {"RPCD_PI_ORACLE_DIR": str(oracle.root), **(env or {})})
    methods = {"getState": "get_state", "resume": "switch_session", "prompt": "prompt", "newSession": "new_session",
               "fork": "fork"}
    return Side("pi", [str(oracle.node), str(cli), "--mode", "rpc", *args], full_env, str(project), _pi_request,
                lambda m: m.get("id") if m.get("type") == "response" else None, _pi_event, methods)


# -- the measures ------------------------------------------------------------------------------------


@dataclass
class Context:
    full: bool
    tmp: Path
    oracle: Any
    passes: int
    session_file: Path | None = None
    chunks: int = 0
    sides: tuple[str, ...] = ("rpcd", "pi")
    python: Sequence[str] | None = None
    """How rpcd's interpreter is started (``--profile``: under cProfile)."""
    cycles: int | None = None
    """``replacements``: cycles measured after the warm-up (``None``: 2,000 with ``full``, else 200)."""

    def home(self, name: str) -> tuple[Path, Path]:
        home = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.tmp))
        project = home / "project"
        project.mkdir()
        (home / "agent").mkdir()
        return home, project

    def session(self) -> Path:
        if self.session_file is None:
            directory = self.tmp / "large"
            directory.mkdir()
            project = self.tmp / "large-project"
            project.mkdir()
            self.session_file = directory / "large.jsonl"
            generate_session(self.session_file, 20_000 if self.full else 2_000, cwd=str(project))
        return self.session_file


def interleave(ctx: Context, one: Callable[[str], dict[str, float]]) -> dict[str, dict[str, list[float]]]:
    """``one(side)`` returns named samples; pass k runs rpcd first when k is even, Pi first when odd."""
    samples: dict[str, dict[str, list[float]]] = {"rpcd": {}, "pi": {}}
    for index in range(ctx.passes):
        for side in ctx.sides if index % 2 == 0 else ctx.sides[::-1]:
            for key, value in one(side).items():
                samples[side].setdefault(key, []).append(value)
    return samples


def _side(ctx: Context, which: str, *args: str, rpcd_args: Sequence[str] = (), pi_args: Sequence[str] = (),
          rpcd_env: Mapping[str, str] | None = None, pi_env: Mapping[str, str] | None = None) -> Side:
    home, project = ctx.home(which)
    if which == "rpcd":
        return rpcd_side(home, project, *args, *rpcd_args, env=rpcd_env, python=ctx.python)
    return pi_side(ctx.oracle, home, project, *args, *pi_args, env=pi_env)


_FLOOR = (
    "import sys, json\nimport pygls.server, lsprotocol.types\nline = sys.stdin.readline()\n"
    "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': json.loads(line)['id'], 'result': None}) + '\\n')\n"
    "sys.stdout.flush()\nsys.stdin.read()\n"
)
"""The floor while the wire is pygls: a process that imports pygls + lsprotocol and answers one line."""


def measure_spawn(ctx: Context) -> dict[str, dict[str, list[float]]]:
    def one(which: str) -> dict[str, float]:
        side = _side(ctx, which)
        with running(side) as proc:
            proc.ready()
            answered = time.perf_counter() - proc.started
        result = {"spawn_ms": answered * 1000}
        if which == "rpcd":  # the floor runs beside rpcd's pass
            home, project = ctx.home("floor")
            floor = Side("floor", [sys.executable, "-c", _FLOOR], _clean_env(home, {}), str(project), _rpcd_request,
                         lambda m: m.get("id"), lambda m: None)
            with running(floor) as proc:
                proc.call("ping")
                result["floor_ms"] = (time.perf_counter() - proc.started) * 1000
        return result

    return interleave(ctx, one)


def measure_exit(ctx: Context) -> dict[str, dict[str, list[float]]]:
    def one(which: str) -> dict[str, float]:
        side = _side(ctx, which)
        proc = Proc(side)
        proc.ready()
        after_close = proc.close()
        return {"whole_ms": (time.perf_counter() - proc.started) * 1000, "exit_ms": after_close * 1000}

    return interleave(ctx, one)


def measure_resume(ctx: Context) -> dict[str, dict[str, list[float]]]:
    path = str(ctx.session())

    def one(which: str) -> dict[str, float]:
        side = _side(ctx, which)
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


def measure_events(ctx: Context) -> dict[str, dict[str, list[float]]]:
    chunks = ctx.chunks
    script = ctx.tmp / "events-script.json"
    script.write_bytes(orjson.dumps({"steps": [{"text": CHUNK, "repeat": chunks}], "chunkSize": len(CHUNK)}))

    def one(which: str) -> dict[str, float]:
        deltas: list[str] = []
        ended = threading.Event()
        ended_at = [0.0]

        def on_event(event: dict[str, Any], now: float) -> None:
            kind = event.get("type")
            if kind == "message_update":
                inner = event.get("assistantMessageEvent") or {}
                if inner.get("type") == "text_delta":
                    deltas.append(inner["delta"])
            elif kind == "agent_end":
                ended_at[0] = now
                ended.set()

        side = _side(ctx, which, rpcd_args=["--in-memory"], rpcd_env={"RPCD_FAUX_SCRIPT": str(script)},
                     pi_args=["--no-session", "-e", str(PI_STREAM_EXTENSION), "--provider", "faux", "--model",
                              "faux-1"],
                     pi_env={"RPCD_BENCH_CHUNK": CHUNK, "RPCD_BENCH_CHUNKS": str(chunks)})
        with running(side, on_event) as proc:
            proc.ready()
            started = time.perf_counter()
            params = {"text": "go"} if which == "rpcd" else {"message": "go"}
            proc.send("prompt", params)
            if not ended.wait(TIMEOUT_S):
                raise RuntimeError(f"{which}: the turn never ended")
            elapsed = ended_at[0] - started
        if "".join(deltas) != CHUNK * chunks:
            raise AssertionError(f"{which}: streamed text incomplete ({len(deltas)} deltas)")
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


def measure_getstate(ctx: Context) -> dict[str, dict[str, list[float]]]:
    count = 5_000 if ctx.full else 1_000

    def one(which: str) -> dict[str, float]:
        side = _side(ctx, which)
        with running(side) as proc:
            proc.ready()
            get_state = percentile(_round_trips(proc, "getState", count), 50)
            ping = percentile(_round_trips(proc, "ping", count), 50) if which == "rpcd" else get_state
        result = {"getstate_us": get_state, "ping_us": ping}
        if which == "rpcd":  # the bare echo loop runs beside rpcd's pass: the floor of Python + a pipe
            home, project = ctx.home("echo")
            echo = Side("echo", [sys.executable, "-c", _ECHO], _clean_env(home, {}), str(project), _rpcd_request,
                        lambda m: m.get("id"), lambda m: None)
            with running(echo) as proc:
                result["echo_us"] = percentile(_round_trips(proc, "ping", count), 50)
        return result

    return interleave(ctx, one)


def measure_replacements(ctx: Context) -> dict[str, dict[str, list[float]]]:
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
        side = _side(ctx, which)
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


def _med(samples: dict[str, dict[str, list[float]]], side: str, key: str) -> float:
    return statistics.median(samples[side][key])


def _spread(samples: dict[str, dict[str, list[float]]], side: str, key: str, unit: str) -> str:
    values = samples[side][key]
    return f"{side} {min(values):.0f}-{max(values):.0f} {unit}"


def rows_for(name: str, samples: dict[str, dict[str, list[float]]], ctx: Context, loads: str) -> list[Measurement]:
    passes = f"median of {ctx.passes} interleaved passes; {loads}"
    if name == "spawn":
        return [Measurement("spawn -> first session answer (getState)", _med(samples, "rpcd", "spawn_ms"), "ms",
                            "pi --mode rpc -> get_state", _med(samples, "pi", "spawn_ms"),
                            note=f"{passes}; {_spread(samples, 'rpcd', 'spawn_ms', 'ms')}, "
                                 f"{_spread(samples, 'pi', 'spawn_ms', 'ms')}"),
                Measurement("  floor: python importing pygls + lsprotocol, answering one line",
                            _med(samples, "rpcd", "floor_ms"), "ms", "pi --mode rpc -> get_state",
                            _med(samples, "pi", "spawn_ms"))]
    if name == "exit":
        return [
            Measurement("whole process: spawn -> answer -> end of input -> exit", _med(samples, "rpcd", "whole_ms"),
                        "ms", "Pi, same", _med(samples, "pi", "whole_ms"), note=passes),
            Measurement("  of which: end of input -> exit", _med(samples, "rpcd", "exit_ms"), "ms", "Pi, same",
                        _med(samples, "pi", "exit_ms"), note=passes),
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


MEASURE_FUNCTIONS: dict[str, Callable[[Context], dict[str, dict[str, list[float]]]]] = {
    "spawn": measure_spawn,
    "exit": measure_exit,
    "resume": measure_resume,
    "events": measure_events,
    "getstate": measure_getstate,
    "replacements": measure_replacements,
}


def run(full: bool, only: Sequence[str] | None = None, passes: int | None = None,
        cycles: int | None = None) -> list[Measurement]:
    oracle = _oracle()
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-vs-pi-") as tmp:
        ctx = Context(full=full, tmp=Path(tmp), oracle=oracle, passes=passes or (5 if full else 3),
                      chunks=50_000 if full else 5_000, cycles=cycles)
        for name in only or MEASURES:
            before = load()
            print(f"[bench] vs-pi {name} ({before}) ...", file=sys.stderr, flush=True)
            samples = MEASURE_FUNCTIONS[name](ctx)
            rows += rows_for(name, samples, ctx, f"{before} -> {load()}")
    return rows


def profile(name: str, full: bool, out_dir: Path, top: int = 35, cycles: int | None = None) -> str:
    """Run measure ``name`` once, rpcd side only, with the daemon under cProfile; the top functions.

    The daemon writes its profile when it exits normally (its input ends), so every measure can be
    profiled the same way; ``pstats`` reads it back sorted by cumulative and by own time.
    """
    import io
    import pstats

    oracle = _oracle()
    out = out_dir / f"rpcd-{name}.prof"
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-profile-") as tmp:
        ctx = Context(full=full, tmp=Path(tmp), oracle=oracle, passes=1, chunks=50_000 if full else 5_000,
                      sides=("rpcd",), python=[sys.executable, "-m", "cProfile", "-o", str(out)], cycles=cycles)
        if name == "resume":
            ctx.session()  # generated before the profiled process starts
        MEASURE_FUNCTIONS[name](ctx)
    text = io.StringIO()
    stats = pstats.Stats(str(out), stream=text)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return f"profile written to {out} (open with `python -m pstats {out}`)\n" + text.getvalue()
