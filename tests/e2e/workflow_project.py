"""A project folder written the way Pi users write them, for rpcd and real Pi alike.

* prompt templates: ``.pi/prompts/review.md`` (description, ``argument-hint``, ``$1``,
  ``${2:-...}``, ``$@``), ``.pi/prompts/fixup.md`` (no frontmatter: the first line describes it;
  ``${@:2}``), and the user's ``<agentDir>/prompts/standup.md``;
* skills: ``.pi/skills/deploy`` (valid), ``.pi/skills/Release_Notes`` (a name Pi warns about but
  loads), ``.agents/skills/no-description`` (invalid: no description, not loaded), the user's
  ``~/.agents/skills/notes`` (another harness's folder) and ``<agentDir>/skills/secret``
  (``disable-model-invocation``: a command, not in the system prompt);
* extension commands, written twice — ``workflow.ts`` for Pi, ``workflow.py`` for rpcd (each
  loads only its own language): ``/ask`` opens the editor dialog and reports the answer with a
  notification, ``/branch <entryId>`` forks through the host and notifies from the replacement
  session, ``/explode`` raises.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

TS_EXTENSION = """
export default function (pi) {
  pi.registerCommand("ask", {
    description: "Write a note in the editor",
    handler: async (args, ctx) => {
      const text = await ctx.ui.editor("Write a note", args || "draft");
      ctx.ui.notify(`note: ${text}`, "info");
    },
  });
  pi.registerCommand("branch", {
    description: "Fork before a message",
    handler: async (args, ctx) => {
      await ctx.fork(args.trim(), {
        withSession: async (next) => { next.ui.notify("forked", "info"); },
      });
    },
  });
  pi.registerCommand("explode", {
    handler: async () => { throw new Error("boom"); },
  });
}
"""

PY_EXTENSION = """
def register(pi):
    async def ask(args, ctx):
        text = await ctx.ui.editor("Write a note", args or "draft")
        ctx.ui.notify(f"note: {text}", "info")

    async def branch(args, ctx):
        async def after(next_ctx):
            next_ctx.ui.notify("forked", "info")

        await ctx.fork(args.strip(), with_session=after)

    def explode(args, ctx):
        raise RuntimeError("boom")

    pi.register_command("ask", "Write a note in the editor", ask)
    pi.register_command("branch", "Fork before a message", branch)
    pi.register_command("explode", explode)
"""

FILES = {
    "project/.pi/prompts/review.md": """\
        ---
        description: Review a file for bugs
        argument-hint: "<file> [focus]"
        ---
        Review $1. Focus on ${2:-everything}.
        Context: $@
        """,
    "project/.pi/prompts/fixup.md": """\
        Fix the failing test $1 and keep the rest
        Then re-run: ${@:2}
        """,
    "agent/prompts/standup.md": """\
        ---
        description: Write my standup
        ---
        Summarize yesterday in ${1:-3} bullet points.
        """,
    "project/.pi/skills/deploy/SKILL.md": """\
        ---
        name: deploy
        description: Deploys the app to an environment. Use for releases and rollbacks.
        ---
        # Deploy

        Run `./scripts/deploy.sh <env>` from the skill directory.
        """,
    "project/.pi/skills/Release_Notes/SKILL.md": """\
        ---
        name: Release_Notes
        description: Writes release notes from the git log.
        ---
        Read `git log` since the last tag.
        """,
    "project/.agents/skills/no-description/SKILL.md": """\
        ---
        name: no-description
        ---
        This skill forgot its description.
        """,
    "home/.agents/skills/notes/SKILL.md": """\
        ---
        description: Keeps meeting notes in notes/.
        ---
        Append to notes/YYYY-MM-DD.md.
        """,
    "agent/skills/secret/SKILL.md": """\
        ---
        name: secret
        description: Only when asked by name.
        disable-model-invocation: true
        ---
        The secret procedure.
        """,
    "project/.pi/extensions/workflow.ts": TS_EXTENSION,
    "project/.pi/extensions/workflow.py": PY_EXTENSION,
    "project/README.md": "# demo project\n",
}


def make_workflow_project(root: Path) -> tuple[Path, Path, Path]:
    """``(project, agent_dir, home)`` under ``root``."""
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "project", root / "agent", root / "home"


PROMPTS = [
    '/review src/app.py "error handling" and more',
    "/review",
    "/fixup test_login -x -q",
    "/standup",
    "/standup 5",
    "/skill:deploy staging now ",
    "/skill:Release_Notes",
    "/skill:secret",
    "/skill:no-description why",
    "/unknown stays as typed",
]
"""Inputs whose expansion (the user message the model gets, and the session persists) is compared."""
