"""Benchmark runner: ``scripts/bench [--full] [--json FILE] [section ...]``.

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
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    raise SystemExit(main())
