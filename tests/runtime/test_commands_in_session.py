"""A Pi project's workflows in a real session: templates and skills expand before the model sees
the text (and the expanded text is persisted), extension commands run instead of a turn,
queued input refuses commands, ``commands()`` lists everything in Pi's order, the system prompt
lists the skills, a replacement that changes the set says so, an untrusted project contributes
nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import InvalidArgumentError
from rpcd.core.values import CommandRan, ExtensionBindings, ExtensionError
from rpcd.providers.base import ProviderRegistry, ProviderRequest
from rpcd.providers.faux import FauxProvider
from rpcd.runtime.factory import make_default_factory
from rpcd.runtime.runtime import AgentSessionRuntime, create_runtime
from rpcd.runtime.services import ProcessInputs, ProjectTrustContext, TrustDecision
from rpcd.store import SessionManager
from rpcd.tools import ToolSelection

from .services._projects import write

pytestmark = pytest.mark.anyio

COMMANDS_EXTENSION = """
def register(pi):
    async def hello(args, ctx):
        ctx.append_entry("hello-ran", {"args": args})

    def broken(args, ctx):
        raise ValueError("no " + args)

    pi.register_command("hello", "Say hello", hello, argument_hint="[name]")
    pi.register_command("broken", broken)
"""


def project(root: Path, name: str = "proj") -> Path:
    cwd = root / name
    write(cwd / ".pi" / "prompts" / "review.md",
          '---\ndescription: Review a file\nargument-hint: "<file> [focus]"\n---\nReview $1, focus: ${2:-all}.\n')
    write(cwd / ".pi" / "skills" / "deploy" / "SKILL.md",
          "---\nname: deploy\ndescription: Deploys the app. Use for releases.\n---\n# Deploy\nRun make deploy.\n")
    write(cwd / ".pi" / "skills" / "broken" / "SKILL.md", "---\nname: broken\n---\nno description\n")
    write(cwd / ".pi" / "extensions" / "commands.py", COMMANDS_EXTENSION)
    return cwd


class Recorder(FauxProvider):
    """The faux model, remembering what each call was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ProviderRequest] = []

    async def stream(self, request: ProviderRequest) -> Any:
        self.requests.append(request)
        async for event in super().stream(request):
            yield event


async def start(
    cwd: Path, agent_dir: Path, *, trust: bool = True, selection: ToolSelection | None = None
) -> tuple[AgentSessionRuntime, Recorder, list[ExtensionError], list[dict[str, Any]]]:
    async def authorize(path: str, context: ProjectTrustContext) -> TrustDecision:
        return TrustDecision("trust" if trust else "deny")

    model = Recorder()
    factory = make_default_factory(
        ProcessInputs(tool_selection=selection or ToolSelection()), authorize_project=authorize,
        provider_registry=ProviderRegistry([model]),
    )
    sm = SessionManager.create(str(cwd), agent_dir=str(agent_dir))
    runtime = await create_runtime(factory, cwd=str(cwd), agent_dir=str(agent_dir), session_manager=sm)
    errors: list[ExtensionError] = []
    events: list[dict[str, Any]] = []
    bindings = ExtensionBindings(on_error=errors.append)

    async def rebind(session: Any) -> None:
        await session.bind_extensions(bindings)
        session.subscribe(lambda event: events.append(dict(event)))

    runtime.set_rebind_session(rebind)
    await rebind(runtime.session)
    return runtime, model, errors, events


def user_texts(session_file: str) -> list[str]:
    out = []
    for line in Path(session_file).read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "message" and entry["message"]["role"] == "user":
            out.append(entry["message"]["content"][0]["text"])
    return out


async def test_templates_and_skills_expand_before_the_model_and_are_persisted_expanded(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    runtime, model, errors, _ = await start(cwd, tmp_path / "agent")
    session = runtime.session
    assert await session.prompt('/review app.py "error handling"') == "stop"
    skill_file = cwd / ".pi" / "skills" / "deploy" / "SKILL.md"
    assert await session.prompt("/skill:deploy  to staging ") == "stop"
    assert await session.prompt("/unknown stays as typed") == "stop"
    skill_block = (f'<skill name="deploy" location="{skill_file}">\nReferences are relative to '
                   f'{skill_file.parent}.\n\n# Deploy\nRun make deploy.\n</skill>\n\nto staging')
    expected = ["Review app.py, focus: error handling.", skill_block, "/unknown stays as typed"]
    sent = [next(m for m in reversed(r.messages) if m["role"] == "user")["content"][0]["text"] for r in model.requests]
    assert sent == expected
    assert session.session_file is not None and user_texts(session.session_file) == expected
    assert errors == []


async def test_extension_commands_run_instead_of_a_turn(tmp_path: Path) -> None:
    runtime, model, errors, _ = await start(project(tmp_path), tmp_path / "agent")
    session = runtime.session
    assert await session.prompt("/hello  world") == CommandRan("hello")
    assert model.requests == []  # no turn
    custom = [e for e in session.session_manager.get_entries() if e.get("type") == "custom"]
    assert [(e["customType"], e["data"]) for e in custom] == [("hello-ran", {"args": " world"})]
    assert await session.prompt("/broken thing") == CommandRan("broken")
    assert errors == [ExtensionError("command:broken", "command", "ValueError: no thing")]
    assert await session.prompt("hello") == "stop"  # the session goes on


async def test_queued_input_expands_but_refuses_extension_commands(tmp_path: Path) -> None:
    runtime, _, _, _ = await start(project(tmp_path), tmp_path / "agent")
    session = runtime.session
    assert session.expand_input("/review a.py", queued=True) == "Review a.py, focus: all."
    with pytest.raises(InvalidArgumentError, match='Extension command "/hello" cannot be queued'):
        session.expand_input("/hello there", queued=True)


async def test_commands_are_listed_in_pis_order_with_sources_and_hints(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    write(tmp_path / "agent" / "prompts" / "mine.md", "My own template\n")
    runtime, _, _, _ = await start(cwd, tmp_path / "agent")
    listed = [(c.name, c.source, c.description, c.argument_hint, c.source_info["scope"])
              for c in runtime.session.commands()]
    assert listed == [
        ("hello", "extension", "Say hello", "[name]", "project"),
        ("broken", "extension", None, None, "project"),
        ("review", "prompt", "Review a file", "<file> [focus]", "project"),
        ("mine", "prompt", "My own template", None, "user"),
        ("skill:deploy", "skill", "Deploys the app. Use for releases.", None, "project"),
    ]
    warnings = [d.message for d in runtime.diagnostics if "broken" in d.message]
    assert len(warnings) == 1 and "description is required" in warnings[0]


async def test_the_system_prompt_lists_skills_when_read_or_bash_can_load_them(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    runtime, model, _, _ = await start(cwd, tmp_path / "agent")
    await runtime.session.prompt("hi")
    prompt = model.requests[0].system_prompt
    assert "<available_skills>" in prompt and "<name>deploy</name>" in prompt
    assert prompt.index("</available_skills>") < prompt.index("Current working directory:")
    runtime, model, _, _ = await start(cwd, tmp_path / "agent2", selection=ToolSelection(allow=("grep",)))
    await runtime.session.prompt("hi")
    assert "<available_skills>" not in model.requests[0].system_prompt


async def test_a_replacement_that_changes_the_commands_says_so(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    with_commands = project(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    runtime, _, _, events = await start(with_commands, agent_dir)
    await runtime.new_session()  # same cwd, same set: nothing to say
    assert [e for e in events if e["type"] == "commands_changed"] == []
    other = SessionManager.create(str(plain), agent_dir=str(agent_dir))
    other.append_message({"role": "user", "content": [{"type": "text", "text": "x"}], "timestamp": 1})
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    other.append_message({"role": "assistant", "content": [], "api": "faux", "provider": "faux", "model": "faux-1",
                          "usage": {**zero, "totalTokens": 0, "cost": {**zero, "total": 0}}, "stopReason": "stop",
                          "timestamp": 2})
    assert other.get_session_file() is not None
    await runtime.switch_session(str(other.get_session_file()))
    (changed,) = [e for e in events if e["type"] == "commands_changed"]
    assert changed["commands"] == []  # the plain project has none
    assert runtime.session.commands() == []


async def test_an_untrusted_project_contributes_no_commands(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    write(tmp_path / "agent" / "skills" / "mine" / "SKILL.md", "---\ndescription: the user's own\n---\nbody\n")
    runtime, model, _, _ = await start(cwd, tmp_path / "agent", trust=False)
    assert [c.name for c in runtime.session.commands()] == ["skill:mine"]
    assert await runtime.session.prompt("/review a.py") == "stop"
    assert model.requests[0].messages[-1]["content"][0]["text"] == "/review a.py"  # not a template here
    (warning,) = [d for d in runtime.diagnostics if "not trusted" in d.message]
    assert ".pi/prompts" in warning.message and ".pi/skills" in warning.message
