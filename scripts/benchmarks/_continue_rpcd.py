"""rpcd's ``--continue`` lookup timed in one fresh process (the first call finds no index; the others
are warm), for ``_vs_sessions.py``. argv: cwd, session dir, agent dir, runs; stdout: {"ms", "path"}."""

from __future__ import annotations

import json
import sys
import time

try:
    from rpcd.store.recency import find_most_recent_session
except ImportError:  # a checkout before the facts cache (the "before" column of the measure)
    from rpcd.store.listing import find_most_recent_session  # type: ignore[attr-defined,no-redef]


def main() -> None:
    cwd, directory, agent_dir, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    times = []
    path = None
    for _ in range(runs):
        started = time.perf_counter()
        path = find_most_recent_session(cwd, directory, agent_dir=agent_dir)
        times.append((time.perf_counter() - started) * 1000)
    sys.stdout.write(json.dumps({"ms": times, "path": path}))


if __name__ == "__main__":
    main()
