"""Benchmark runner: ``scripts/bench [--full] [--json FILE] [section ...]``.

``scripts/bench --vs-pi [measure ...]`` runs rpcd against real Pi 0.85.0, interleaved, at the
issue's sizes (``benchmarks/vs_pi.py``; measures: spawn exit getstate turn tools acp resume resume-big continue
events replacements; ``--big`` adds resume-big, the 200,000-entry session).
``scripts/bench --profile NAME`` profiles one vs-pi measure (the daemon under cProfile) or one
in-process section (cProfile around its ``run``) and prints the top functions.

Each section is a module ``scripts/benchmarks/<name>.py`` exposing
``run(full: bool) -> list[Measurement]``. Every measurement is printed beside the
baseline measured in the same run, with their ratio, so numbers from a noisy shared
machine stay comparable.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from benchmarks._harness import Measurement, format_table  # noqa: E402


def available_sections() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(HERE / "benchmarks")]) if not m.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("sections", nargs="*", help=f"sections to run (default all): {available_sections()}")
    parser.add_argument("--full", action="store_true", help="issue-sized runs (slow)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--vs-pi", action="store_true",
                        help="rpcd against real Pi 0.85.0 at the issue's sizes; positional names are its measures")
    parser.add_argument("--passes", type=int, help="--vs-pi: interleaved passes (default 5)")
    parser.add_argument("--profile", metavar="NAME", help="profile a vs-pi measure or a section and print the top")
    parser.add_argument("--big", action="store_true",
                        help="--vs-pi: also resume the 200,000-entry (~450 MB) session (measure resume-big)")
    parser.add_argument("--cycles", type=int, help="--vs-pi/--profile replacements: cycles after the warm-up "
                                                   "(default 2,000; the issue's RSS goal is stated over 10,000)")
    args = parser.parse_args(argv)
    if args.profile:
        return _profile(args.profile, args.full or args.vs_pi, args.cycles)
    if args.vs_pi:
        from benchmarks import vs_pi

        unknown = sorted(set(args.sections) - set(vs_pi.MEASURES))
        if unknown:
            parser.error(f"unknown vs-pi measures: {unknown} (known: {list(vs_pi.MEASURES)})")
        rows = vs_pi.run(full=True, only=args.sections or None, passes=args.passes or 5, cycles=args.cycles,
                         big=args.big)
        print(format_table(rows, title="rpcd vs Pi 0.85.0 (ratio rpcd/Pi)"), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps([m.as_dict() for m in rows], indent=2))
        return 0
    names = args.sections or available_sections()
    unknown = sorted(set(names) - set(available_sections()))
    if unknown:
        parser.error(f"unknown sections: {unknown}")
    results: list[Measurement] = []
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        started = time.perf_counter()
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        section = module.run(full=args.full)
        print(f"[bench] {name} done in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
        results.extend(section)
        print(format_table(section, title=name), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps([m.as_dict() for m in results], indent=2))
    return 0


def _profile(name: str, full: bool, cycles: int | None = None) -> int:
    import cProfile
    import pstats
    import tempfile

    from benchmarks import vs_pi

    out_dir = Path(tempfile.mkdtemp(prefix="rpcd-profile-"))
    if name in vs_pi.MEASURES:
        print(vs_pi.profile(name, full, out_dir, cycles=cycles))
        return 0
    if name not in available_sections():
        print(f"unknown: {name} (vs-pi measures {list(vs_pi.MEASURES)}, sections {available_sections()})",
              file=sys.stderr)
        return 2
    module = importlib.import_module(f"benchmarks.{name}")
    out = out_dir / f"{name}.prof"
    profiler = cProfile.Profile()
    profiler.runcall(module.run, full)
    profiler.dump_stats(out)
    print(f"profile written to {out} (in-process part only: spawned daemons are not in it)")
    stats = pstats.Stats(str(out))
    stats.sort_stats("cumulative").print_stats(35)
    stats.sort_stats("tottime").print_stats(35)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
