"""``--vs-pi continue`` and ``--vs-pi resume --big``: sessions at the sizes users accumulate.

* ``continue``: a project with ``CORPUS`` Pi-shaped sessions (``_workload.generate_corpus``: distinct
  ids, each newer than the last by its messages and its mtime, so both definitions of "most recent"
  pick the same file). (1) The lookup alone in one warm process: rpcd's ``find_most_recent_session``
  (its first call in a fresh process, then warm calls) | Pi's ``findMostRecentSession`` (headers +
  mtime), ``LOOKUPS`` calls each; (2) the whole start: ``rpcd --continue`` | ``pi --mode rpc
  --continue`` spawn -> the first state answered, naming the newest session. Each side keeps its
  agent dir across passes (the session files are hard links of one corpus), as a user's does.
* ``resume --big``: ``resume`` | ``switch_session`` of a 200,000-entry (~450 MB) session beside the
  20,000-entry one in the same passes: time, VmRSS after, and the growth from 20k to 200k (10x the
  entries: linear is 10x).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._harness import Measurement
from benchmarks._rpc import REPO, rss_kb
from benchmarks._sides import Context, Proc, Samples, interleave, side_for
from benchmarks._workload import generate_corpus

HERE = Path(__file__).resolve().parent
CORPUS = 1_000
LOOKUPS = 20
BIG = 200_000


def _encode(cwd: str) -> str:
    sys.path.insert(0, str(REPO))
    from rpcd.store.paths import encode_cwd

    return encode_cwd(cwd)


def measure_continue(ctx: Context) -> Samples:
    if "corpus" not in ctx.cache:
        project = ctx.tmp / "corpus-project"
        project.mkdir()
        corpus = generate_corpus(ctx.tmp / "corpus", str(project), CORPUS)
        homes = {}
        for which in ("rpcd", "pi"):
            home = ctx.home(f"continue-{which}")
            sessions = home[0] / "agent" / "sessions" / _encode(str(project))
            sessions.mkdir(parents=True)
            for path in corpus:
                os.link(path, sessions / path.name)
            homes[which] = (home[0], project, sessions)
        ctx.cache["corpus"] = (project, corpus, homes, sum(os.path.getsize(p) for p in corpus))
    project, corpus, homes, _ = ctx.cache["corpus"]
    newest = str(homes["rpcd"][2] / corpus[-1].name)
    first_pass = {"rpcd": True, "pi": True}

    def one(which: str) -> dict[str, float]:
        home, _, sessions = homes[which]
        result: dict[str, float] = {}
        if which == "rpcd":
            done = subprocess.run([sys.executable, "-P", str(HERE / "_continue_rpcd.py"), str(project), str(sessions),
                                   str(home / "agent"), str(LOOKUPS)], capture_output=True, check=True,
                                  env={**os.environ, "PYTHONPATH": str(REPO)})
        else:
            done = subprocess.run([str(ctx.oracle.node), str(HERE / "_continue_pi.mjs")], capture_output=True,
                                  check=True, input=json.dumps({"dir": str(sessions), "runs": LOOKUPS}).encode(),
                                  env={**os.environ, "RPCD_PI_ORACLE_DIR": str(ctx.oracle.root)})
        lookup = json.loads(done.stdout)
        if os.path.basename(lookup["path"] or "") != corpus[-1].name:
            raise AssertionError(f"{which}: the lookup found {lookup['path']}, not the newest session")
        if first_pass[which]:
            result["lookup_cold_ms"] = lookup["ms"][0]
        result["lookup_first_ms"] = lookup["ms"][0]
        result["lookup_warm_ms"] = statistics.median(lookup["ms"][1:])
        side = side_for(ctx, which, "--continue", home=(home, project))
        proc = Proc(side)
        proc.ready()
        result["start_ms"] = (time.perf_counter() - proc.started) * 1000
        state = proc.call("getState")
        proc.close()
        data = state.get("result") or state.get("data") or {}
        if os.path.basename(data.get("sessionFile") or "") != os.path.basename(newest):
            raise AssertionError(f"{which}: --continue opened {data.get('sessionFile')}")
        if first_pass[which]:
            result["start_cold_ms"] = result["start_ms"]
        first_pass[which] = False
        return result

    return interleave(ctx, one)


def measure_resume_sizes(ctx: Context, sizes: tuple[int, ...]) -> Samples:
    paths = {size: str(ctx.session(size)) for size in sizes}

    def one(which: str) -> dict[str, float]:
        result: dict[str, float] = {}
        for size, path in paths.items():
            side = side_for(ctx, which)
            proc = Proc(side)
            proc.ready()
            started = time.perf_counter()
            proc.call("resume", {"sessionPath": path})
            result[f"{size}:resume_ms"] = (time.perf_counter() - started) * 1000
            result[f"{size}:rss_mb"] = rss_kb(proc.proc.pid) / 1024
            state = proc.call("getState")
            proc.close()
            data = state.get("result") or state.get("data") or {}
            if not data.get("messageCount"):
                raise AssertionError(f"{which}: the resumed {size}-entry session has no messages: {data}")
            result[f"{size}:messages"] = float(data["messageCount"])
        return result

    return interleave(ctx, one)


def measure_resume_big(ctx: Context) -> Samples:
    return measure_resume_sizes(ctx, (20_000, BIG))


def _med(samples: Samples, side: str, key: str) -> float:
    return statistics.median(samples[side][key])


def rows_continue(samples: Samples, ctx: Context, passes: str) -> list[Measurement]:
    total_mb = ctx.cache["corpus"][3] / 1e6
    med = _med
    return [
        Measurement(f"--continue lookup over {CORPUS:,} sessions ({total_mb:.0f} MB), warm process",
                    med(samples, "rpcd", "lookup_warm_ms"), "ms", "Pi findMostRecentSession, same files",
                    med(samples, "pi", "lookup_warm_ms"),
                    note=f"{passes}; median of {LOOKUPS - 1} calls after the first of each pass"),
        Measurement("  first lookup of a fresh process", med(samples, "rpcd", "lookup_first_ms"), "ms", "Pi, same",
                    med(samples, "pi", "lookup_first_ms"),
                    note=f"the very first (rpcd: no index yet): rpcd {med(samples, 'rpcd', 'lookup_cold_ms'):.0f} ms, "
                         f"Pi {med(samples, 'pi', 'lookup_cold_ms'):.0f} ms"),
        Measurement("start with --continue -> first state answered (the newest session)",
                    med(samples, "rpcd", "start_ms"), "ms", "pi --mode rpc --continue -> get_state",
                    med(samples, "pi", "start_ms"),
                    note=f"first start in a fresh agent dir: rpcd {med(samples, 'rpcd', 'start_cold_ms'):.0f} ms, "
                         f"Pi {med(samples, 'pi', 'start_cold_ms'):.0f} ms"),
    ]


def rows_resume_big(samples: Samples, ctx: Context, passes: str) -> list[Measurement]:
    small, big = 20_000, BIG
    size_mb = os.path.getsize(ctx.session(big)) / 1e6
    med = _med

    def growth(side: str) -> float:
        return med(samples, side, f"{big}:resume_ms") / med(samples, side, f"{small}:resume_ms")

    return [
        Measurement(f"resume ({big:,} entries, {size_mb:.0f} MB)", med(samples, "rpcd", f"{big}:resume_ms"), "ms",
                    "Pi switch_session", med(samples, "pi", f"{big}:resume_ms"),
                    note=f"{passes}; {int(med(samples, 'rpcd', f'{big}:messages'))} messages in context"),
        Measurement("  VmRSS after that resume", med(samples, "rpcd", f"{big}:rss_mb"), "MB", "Pi, same",
                    med(samples, "pi", f"{big}:rss_mb")),
        Measurement(f"  growth of the resume time, {small:,} -> {big:,} entries (10x; linear = 10x)",
                    growth("rpcd"), "x", "Pi, same", growth("pi"),
                    note=f"{small:,}: rpcd {med(samples, 'rpcd', f'{small}:resume_ms'):.0f} ms, "
                         f"Pi {med(samples, 'pi', f'{small}:resume_ms'):.0f} ms; RSS rpcd "
                         f"{med(samples, 'rpcd', f'{small}:rss_mb'):.0f} MB, "
                         f"Pi {med(samples, 'pi', f'{small}:rss_mb'):.0f} MB"),
    ]
