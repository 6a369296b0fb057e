"""Where skills and prompt templates are found (Pi's resource resolution): locations, order,
trust, discovery modes, ignore files, settings entries and their patterns."""

from __future__ import annotations

import os
from pathlib import Path

from rpcd.runtime.resources.discovery import resolve_resources

from ..services._projects import write


def skill(root: Path, rel: str, name: str | None = None) -> Path:
    folder = root / rel
    return write(folder / "SKILL.md", f"---\nname: {name or folder.name}\ndescription: d\n---\nbody\n")


def found(kind: str, cwd: Path, agent: Path, home: Path, *, trusted: bool = True, user: dict | None = None,
          project: dict | None = None) -> list[str]:
    resources = resolve_resources(
        kind,  # type: ignore[arg-type]
        cwd=str(cwd), agent_dir=str(agent), global_settings=user or {}, project_settings=project or {},
        project_trusted=trusted, home=str(home),
    )
    return [r.path for r in resources]


def layout(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    home, agent = tmp_path / "home", tmp_path / "home" / ".pi" / "agent"
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    cwd = repo / "pkg" / "app"
    cwd.mkdir(parents=True)
    return home, agent, repo, cwd


def test_skill_locations_in_pis_order(tmp_path: Path) -> None:
    home, agent, repo, cwd = layout(tmp_path)
    user = skill(agent / "skills", "user-one")
    user_agents = skill(home / ".agents" / "skills", "harness-one")
    project = skill(cwd / ".pi" / "skills", "proj-one")
    here = skill(cwd / ".agents" / "skills", "here")
    ancestor = skill(repo / ".agents" / "skills", "at-root")
    outside = skill(tmp_path / ".agents" / "skills", "above-the-repo")
    paths = found("skills", cwd, agent, home)
    assert paths == [str(project), str(here), str(ancestor), str(user), str(user_agents)]
    assert str(outside) not in paths  # ancestors stop at the git root


def test_untrusted_project_contributes_nothing(tmp_path: Path) -> None:
    home, agent, _repo, cwd = layout(tmp_path)
    user = skill(agent / "skills", "user-one")
    skill(cwd / ".pi" / "skills", "proj-one")
    skill(cwd / ".agents" / "skills", "here")
    write(cwd / ".pi" / "prompts" / "p.md", "x")
    user_prompt = write(agent / "prompts" / "u.md", "x")
    project = {"skills": ["extra"], "prompts": ["more"]}
    assert found("skills", cwd, agent, home, trusted=False, project=project) == [str(user)]
    assert found("prompts", cwd, agent, home, trusted=False, project=project) == [str(user_prompt)]


def test_discovery_modes_pi_and_agents(tmp_path: Path) -> None:
    home, agent, _repo, cwd = layout(tmp_path)
    pi_skills, agents_skills = cwd / ".pi" / "skills", cwd / ".agents" / "skills"
    root_md = write(pi_skills / "root.md", "x")
    write(pi_skills / "group" / "nested.md", "x")  # not a skill location in .pi mode
    in_group = skill(pi_skills, "group/inner")
    write(agents_skills / "root.md", "x")  # root files are ignored in .agents
    nested_md = write(agents_skills / "group" / "nested.md", "x")
    stop = skill(agents_skills, "stop")
    write(agents_skills / "stop" / "deeper" / "SKILL.md", "not reached: a SKILL.md folder is one skill")
    write(agents_skills / ".hidden" / "SKILL.md", "x")
    write(agents_skills / "node_modules" / "dep" / "SKILL.md", "x")
    assert found("skills", cwd, agent, home) == [str(in_group), str(root_md), str(nested_md), str(stop)]


def test_ignore_files_are_honoured(tmp_path: Path) -> None:
    home, agent, _repo, cwd = layout(tmp_path)
    skills = agent / "skills"
    write(skills / ".gitignore", "drafts/\n")
    write(skills / "team" / ".ignore", "*-wip\n")
    skill(skills, "drafts/x")
    kept = skill(skills, "team/done")
    skill(skills, "team/thing-wip")
    assert found("skills", cwd, agent, home) == [str(kept)]


def test_settings_entries_and_patterns(tmp_path: Path) -> None:
    home, agent, _repo, cwd = layout(tmp_path)
    claude = skill(home / ".claude" / "skills", "from-claude")
    auto_kept = skill(agent / "skills", "kept")
    skill(agent / "skills", "dropped")
    forced_out = skill(cwd / ".claude" / "skills", "also-claude")
    project_other = skill(cwd / ".claude" / "skills", "other")
    user = {"skills": ["~/.claude/skills", "!dropped"]}
    project = {"skills": ["../.claude/skills", f"-{forced_out.parent}"]}
    assert found("skills", cwd, agent, home, user=user, project=project) == [
        str(project_other), str(claude), str(auto_kept)]


def test_prompt_locations(tmp_path: Path) -> None:
    home, agent, _repo, cwd = layout(tmp_path)
    project = write(cwd / ".pi" / "prompts" / "a.md", "x")
    write(cwd / ".pi" / "prompts" / "sub" / "deep.md", "not discovered: prompts/ is not recursive")
    write(cwd / ".pi" / "prompts" / "notes.txt", "x")
    user = write(agent / "prompts" / "b.md", "x")
    listed = write(tmp_path / "shared" / "sub" / "c.md", "listed directories are walked")
    assert found("prompts", cwd, agent, home, user={"prompts": [str(tmp_path / "shared")]}) == [
        str(project), str(listed), str(user)]


def test_a_file_reached_twice_counts_once(tmp_path: Path) -> None:
    home, agent, _repo, cwd = layout(tmp_path)
    real = skill(agent / "skills", "real")
    (home / ".agents").mkdir(parents=True)
    os.symlink(agent / "skills", home / ".agents" / "skills")
    assert found("skills", cwd, agent, home) == [str(real)]
