"""Pi's resource flags through a real daemon: --no-extensions, --skill, --no-skills, --prompt-template,
--no-prompt-templates (each ``no`` flag keeps the paths given on the command line, as in Pi), and the
``enableSkillCommands`` setting (skills left out of what clients are offered, still expanded)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.driver import Daemon, events_of

COMMAND_EXTENSION = '''
def register(pi):
    pi.register_command("{name}", {{"description": "from {name}", "handler": lambda args, ctx: None}})
'''


def skill(root: Path, name: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: the {name} skill\n---\nDo {name}.\n")


def agent_with_everything(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An agent dir with a discovered extension, skill and template, and one more of each outside it."""
    agent, extra, project = tmp_path / "agent", tmp_path / "extra", tmp_path / "p"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "found.py").write_text(COMMAND_EXTENSION.format(name="found"))
    skill(agent / "skills", "found-skill")
    (agent / "prompts").mkdir()
    (agent / "prompts" / "found-template.md").write_text("Found template $1\n")
    extra.mkdir()
    (extra / "given.py").write_text(COMMAND_EXTENSION.format(name="given"))
    skill(extra / "skills", "given-skill")
    (extra / "given-template.md").write_text("Given template $1\n")
    project.mkdir()
    return agent, extra, project


def command_names(d: Daemon) -> list[str]:
    return [c["name"] for c in d.call("getCommands")["commands"]]


def test_cli_resources_load_beside_the_discovered_ones_and_the_no_flags_keep_only_them(tmp_path: Path) -> None:
    agent, extra, project = agent_with_everything(tmp_path)
    given = ["-e", str(extra / "given.py"), "--skill", str(extra / "skills" / "given-skill"),
             "--prompt-template", str(extra / "given-template.md")]
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), *given) as d:
        d.initialize()
        assert command_names(d) == ["found", "given", "found-template", "given-template",
                                    "skill:found-skill", "skill:given-skill"]
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), *given, "--no-extensions", "--no-skills",
                "--no-prompt-templates") as d:
        d.initialize()
        assert command_names(d) == ["given", "given-template", "skill:given-skill"]
        d.call("newSession")  # every session of the process is built with them
        assert command_names(d) == ["given", "given-template", "skill:given-skill"]
        reply = d.call("prompt", {"text": "/given-template now"})
        assert reply["stopReason"] == "stop"
        users = [m for m in d.call("getMessages")["messages"] if m["role"] == "user"]
        assert users[-1]["content"][0]["text"] == "Given template now\n"
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "-ne", "-ns", "-np") as d:  # Pi's short forms
        d.initialize()
        assert command_names(d) == []


def test_a_cli_resource_path_that_does_not_exist_is_an_error_diagnostic(tmp_path: Path) -> None:
    agent, _, project = agent_with_everything(tmp_path)
    missing = tmp_path / "nowhere"
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--skill", str(missing),
                "--prompt-template", str(missing / "t.md")) as d:
        d.initialize()
        assert "skill:found-skill" in command_names(d)  # the rest loads (and the startup report is out)
        messages = [(x["type"], x["message"]) for p in events_of(d.log, "session/diagnostics")
                    for x in p["diagnostics"]]
        assert ("error", f"Skill path does not exist: {missing}") in messages
        assert ("error", f"Prompt template path does not exist: {missing / 't.md'}") in messages


def test_enable_skill_commands_false_hides_skills_from_clients_but_they_still_expand(tmp_path: Path) -> None:
    agent, _, project = agent_with_everything(tmp_path)
    (agent / "settings.json").write_text(json.dumps({"enableSkillCommands": False}))
    (agent / "extensions" / "lister.py").write_text('''
def register(pi):
    def listed(event, ctx):
        ctx.append_entry("listed", [c["name"] for c in pi.get_commands()])
    pi.on("agent_end", listed)
''')
    with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
        d.initialize()
        assert command_names(d) == ["found", "found-template"]
        d.call("prompt", {"text": "/skill:found-skill please"})
        users = [m for m in d.call("getMessages")["messages"] if m["role"] == "user"]
        assert users[-1]["content"][0]["text"].startswith('<skill name="found-skill"')
        listed = [e["data"] for e in d.call("getTree")["entries"] if e.get("customType") == "listed"]
        assert listed == [["found", "found-template", "skill:found-skill"]]  # Pi's getCommands lists them
