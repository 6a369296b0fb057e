"""Skills: Pi's validation (warnings, not crashes), loading rules, the system prompt listing and
``/skill:name`` expansion."""

from __future__ import annotations

import os
from pathlib import Path

from rpcd.runtime.resources.discovery import Resource, SourceInfo
from rpcd.runtime.resources.skills import expand_skill_command, format_skills_for_prompt, load_skills

from ..services._projects import write


def resources(*paths: Path) -> list[Resource]:
    return [Resource(str(p), SourceInfo(str(p), "auto", "project")) for p in paths]


def skill_file(root: Path, folder: str, frontmatter: str, body: str = "Body\n") -> Path:
    return write(root / folder / "SKILL.md", f"---\n{frontmatter}\n---\n{body}")


def test_a_valid_skill_loads_with_its_folder_as_base(tmp_path: Path) -> None:
    path = skill_file(tmp_path, "pdf", "name: pdf-tools\ndescription: Work with PDFs.")
    skills, diagnostics = load_skills(resources(path))
    assert diagnostics == []
    (skill,) = skills
    assert (skill.name, skill.description, skill.base_dir) == ("pdf-tools", "Work with PDFs.", str(tmp_path / "pdf"))
    assert not skill.disable_model_invocation


def test_name_problems_are_warnings_and_the_skill_still_loads(tmp_path: Path) -> None:
    bad = skill_file(tmp_path, "x", "name: Bad--Name-\ndescription: ok")
    long = skill_file(tmp_path, "y", f"name: {'a' * 65}\ndescription: {'d' * 1025}")
    skills, diagnostics = load_skills(resources(bad, long))
    assert [s.name for s in skills] == ["Bad--Name-", "a" * 65]
    messages = [d.message for d in diagnostics]
    assert all(d.type == "warning" for d in diagnostics)
    assert any("invalid characters" in m and str(bad) in m for m in messages)
    assert any("start or end with a hyphen" in m for m in messages)
    assert any("consecutive hyphens" in m for m in messages)
    assert any("name exceeds 64 characters (65)" in m for m in messages)
    assert any("description exceeds 1024 characters (1025)" in m for m in messages)


def test_a_skill_without_description_or_with_broken_yaml_is_a_warning_and_not_loaded(tmp_path: Path) -> None:
    missing = skill_file(tmp_path, "m", "name: missing")
    broken = skill_file(tmp_path, "b", "description: Use when: asked")
    skills, diagnostics = load_skills(resources(missing, broken))
    assert skills == []
    assert [d.type for d in diagnostics] == ["warning", "warning"]
    assert "description is required" in diagnostics[0].message


def test_a_loose_markdown_file_without_description_is_silently_no_skill(tmp_path: Path) -> None:
    folder = tmp_path / "loose-skills"
    loose = write(folder / "notes.md", "---\ntitle: notes\n---\nnot a skill\n")
    named = write(folder / "loose.md", "---\ndescription: a loose skill\n---\nbody\n")
    skills, diagnostics = load_skills(resources(loose, named))
    assert diagnostics == []
    assert [(s.name, s.base_dir) for s in skills] == [("loose-skills", str(folder))]  # named after its folder


def test_first_of_a_name_wins_and_a_symlinked_copy_is_silent(tmp_path: Path) -> None:
    first = skill_file(tmp_path, "one", "name: same\ndescription: first")
    second = skill_file(tmp_path, "two", "name: same\ndescription: second")
    link = tmp_path / "link"
    os.symlink(tmp_path / "one", link)
    skills, diagnostics = load_skills(resources(first, link / "SKILL.md", second))
    assert [s.description for s in skills] == ["first"]
    assert len(diagnostics) == 1 and "collision" in diagnostics[0].message


def test_the_prompt_lists_visible_skills_as_pi_does(tmp_path: Path) -> None:
    shown = skill_file(tmp_path, "a", "name: a-skill\ndescription: Uses <tags> & \"quotes\"")
    hidden = skill_file(tmp_path, "h", "name: hidden\ndescription: explicit only\ndisable-model-invocation: true")
    skills, _ = load_skills(resources(shown, hidden))
    text = format_skills_for_prompt(skills)
    assert text.startswith("\n\nThe following skills provide specialized instructions for specific tasks.\n"
                           "Use the read tool to load a skill's file")
    assert "<description>Uses &lt;tags&gt; &amp; &quot;quotes&quot;</description>" in text
    assert f"<location>{shown}</location>" in text
    assert "hidden" not in text
    assert format_skills_for_prompt(skills, "bash").splitlines()[3].startswith("Use bash to load")
    assert format_skills_for_prompt([s for s in skills if s.disable_model_invocation]) == ""


def test_skill_command_expands_to_the_current_file(tmp_path: Path) -> None:
    path = skill_file(tmp_path, "s", "name: s\ndescription: d", "# Steps\nDo it.\n")
    skills, _ = load_skills(resources(path))
    block = (f'<skill name="s" location="{path}">\nReferences are relative to {tmp_path / "s"}.\n\n'
             "# Steps\nDo it.\n</skill>")
    assert expand_skill_command("/skill:s", skills) == block
    assert expand_skill_command("/skill:s   these args  ", skills) == block + "\n\nthese args"
    assert expand_skill_command("/skill:other x", skills) == "/skill:other x"
    path.write_text("---\nname: s\ndescription: d\n---\nchanged\n")
    assert "\n\nchanged\n</skill>" in expand_skill_command("/skill:s", skills)  # read at expansion time
