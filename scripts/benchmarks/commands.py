"""Skills and prompt templates beside Pi's own (ratio = ours / Pi, same tree, same run).

* discovery + loading of N skills (``SKILL.md`` folders) and N templates in an agent dir and a
  project (``resolve_resources`` + ``load_skills`` + ``load_prompt_templates``, what every
  replacement's services do) against Pi's ``loadSkills`` + ``loadPromptTemplates``;
* 10,000 expansions of ``/tN a "b c" d`` against those templates (``expand_prompt_template``)
  against Pi's ``expandPromptTemplate``.

N = 200 (``--full``: 2,000). Pi runs in one warm Node process (the oracle of ``tests/pi_compat``).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from benchmarks._harness import Measurement, median
from benchmarks._pi_script import run_pi_script

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rpcd.runtime.resources.discovery import resolve_resources  # noqa: E402
from rpcd.runtime.resources.prompt_templates import expand_prompt_template, load_prompt_templates  # noqa: E402
from rpcd.runtime.resources.skills import load_skills  # noqa: E402

RUNS = 7
EXPANSIONS = 10_000


def _tree(root: Path, n: int) -> tuple[Path, Path]:
    agent, cwd = root / "agent", root / "project"
    for where, count in ((agent, n // 2), (cwd / ".pi", n - n // 2)):
        for i in range(count):
            skill = where / "skills" / f"skill-{where.name}-{i}"
            skill.mkdir(parents=True)
            (skill / "SKILL.md").write_text(f"---\nname: s-{where.name.strip('.')}-{i}\ndescription: Skill {i} "
                                            "does one thing well. Use when asked.\n---\n# Steps\nDo it.\n")
            (where / "prompts").mkdir(exist_ok=True)
            (where / "prompts" / f"t{where.name.strip('.')}{i}.md").write_text(
                f"---\ndescription: template {i}\nargument-hint: <a> [b]\n---\nDo $1 with ${{2:-x}}: $@\n")
    return agent, cwd


def _ours(agent: Path, cwd: Path, runs: int, text: str) -> tuple[list[float], list[float], tuple[int, int]]:
    load: list[float] = []
    templates = []
    counts = (0, 0)
    for i in range(runs + 1):
        start = time.perf_counter()
        where = {"cwd": str(cwd), "agent_dir": str(agent), "global_settings": {}, "project_settings": {},
                 "project_trusted": True, "home": str(agent.parent)}
        skills, _ = load_skills(resolve_resources("skills", **where))  # type: ignore[arg-type]
        templates, _ = load_prompt_templates(resolve_resources("prompts", **where))  # type: ignore[arg-type]
        elapsed = (time.perf_counter() - start) * 1000
        if i > 0:
            load.append(elapsed)
        counts = (len(skills), len(templates))
    expand: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(EXPANSIONS):
            expand_prompt_template(text, templates)
        expand.append((time.perf_counter() - start) * 1000)
    return load, expand, counts


def _pi(agent: Path, cwd: Path, runs: int, text: str) -> dict[str, object] | None:
    env = {"HOME": str(agent.parent), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"}
    request = {"cwd": str(cwd), "agentDir": str(agent), "runs": runs, "expand": {"text": text, "count": EXPANSIONS}}
    result: dict[str, object] | None = run_pi_script("commands", "_commands_pi.mjs", request, env)
    return result


def run(full: bool) -> list[Measurement]:
    n = 2000 if full else 200
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-commands-") as tmp:
        agent, cwd = _tree(Path(tmp), n)
        last = sorted(p.stem for p in (cwd / ".pi" / "prompts").iterdir())[-1]
        text = f"/{last} a \"b c\" d"
        load, expand, counts = _ours(agent, cwd, RUNS, text)
        pi = _pi(agent, cwd, RUNS, text)
    pi_load = median(pi["load"]) if pi else None  # type: ignore[arg-type]
    pi_expand = median(pi["expand"]) if pi else None  # type: ignore[arg-type]
    if pi and pi.get("counts") != {"skills": counts[0], "templates": counts[1]}:
        print(f"[commands] Pi loaded {pi.get('counts')}, we loaded {counts}", file=sys.stderr)
    return [
        Measurement(f"load {counts[0]} skills + {counts[1]} templates (discovery, read, frontmatter)",
                    median(load), "ms", "Pi 0.85.0's loadSkills + loadPromptTemplates" if pi else None, pi_load),
        Measurement(f"{EXPANSIONS:,} template expansions ({counts[1]} templates)", median(expand), "ms",
                    "Pi's expandPromptTemplate" if pi else None, pi_expand),
    ]
