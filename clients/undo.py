"""File checkpoints, spending caps and full-text search for a person: ``rpcctl undo``,
``rpcctl checkpoints``, ``rpcctl search``, ``rpcctl limits`` and the chat's ``/undo``, ``/checkpoints``,
``/search`` and ``/limits`` (rows of the chat's command table: ``chat.EXTRA_COMMAND_MODULES``).

``undo`` first shows what it would do (a dry run: every file and its diff, a file someone else
changed since marked as such), then — unless ``--dry-run`` — restores; a file changed by someone
else is written only with ``--force``, and the answer says how to undo the undo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpcd.clients import render, slash
from rpcd.clients.keys import Choice
from rpcd.clients.slash import ChatContext


def restore_report(result: Mapping[str, Any]) -> str:
    """A restore (or its dry run) for a person: each file, its diff, what was kept and why."""
    files: Sequence[Mapping[str, Any]] = result.get("files") or []
    dry = bool(result.get("dryRun"))
    if not files:
        return "nothing to restore: the files are as they were at that checkpoint"
    lines = []
    verbs = {"restore": "restore", "recreate": "recreate", "delete": "delete"}
    for f in files:
        path = render.home_short(f.get("path"))
        if f.get("applied"):
            state = "restored" if f.get("action") != "delete" else "deleted"
        elif f.get("conflict"):
            state = f"kept: {f['conflict']}" + ("" if dry else " (--force to overwrite)")
        elif not f.get("restorable"):
            state = "cannot be restored"
        else:
            state = f"would {verbs.get(str(f.get('action')), f.get('action'))}"
        lines.append(f"  {path}: {state}")
        if dry and f.get("diff"):
            lines.extend("    " + line for line in str(f["diff"]).rstrip("\n").split("\n"))
        elif dry and f.get("binary"):
            lines.append("    (binary file)")
    head = "would restore" if dry else "restored"
    done = sum(1 for f in files if f.get("applied"))
    lines.insert(0, f"{head} checkpoint {result.get('entryId')}" + ("" if dry else f": {done} of {len(files)} file(s)"))
    for note in result.get("notes") or ():
        lines.append(f"  note: {note}")
    if result.get("restoreEntryId"):
        again = result["restoreEntryId"]
        lines.append(f"  undo this restore: rpcctl undo {again}  (or /undo {again})")
    return "\n".join(lines)


def checkpoints(result: Mapping[str, Any]) -> str:
    rows = []
    for c in result.get("checkpoints") or ():
        what = c.get("prompt") or ("(restore)" if c.get("reason") == "restore" else "")
        state = "" if c.get("available") else "pruned"
        if c.get("available") and not c.get("finished"):
            state = "unfinished"
        changed = c.get("changedFiles")
        rows.append((c.get("entryId"), render.local_time(c.get("createdAt")), c.get("kind"),
                     "" if changed is None else len(changed), state, render.short(what, 50)))
    if not rows:
        return "no checkpoints: no run of this session changed files"
    undo = result.get("undoEntryId")
    return render.table(("entry", "time", "kind", "files", "", "prompt"), rows) + (
        f"\n\nundo restores {undo}" if undo else "")


def search_results(result: Mapping[str, Any]) -> str:
    lines = []
    for hit in result.get("results") or ():
        lines.append(f"{hit.get('sessionId')}  {render.local_time(hit.get('updatedAt'))}  "
                     f"{render.home_short(hit.get('cwd'))}  {render.short(hit.get('title'), 50)}  "
                     f"({hit.get('matchCount')} match{'es' if hit.get('matchCount') != 1 else ''})")
        for snippet in hit.get("snippets") or ():
            text, start, end = str(snippet.get("text", "")), int(snippet.get("start", 0)), int(snippet.get("end", 0))
            where = f"{snippet.get('kind')} {snippet.get('entryId') or ''}".rstrip()  # a v1 entry has no id
            lines.append(f"    [{where}] {text[:start]}«{text[start:end]}»{text[end:]}")
    if not lines:
        return "no session matches"
    if result.get("nextCursor"):
        lines.append(f"\nmore: --cursor {result['nextCursor']}")
    return "\n".join(lines)


def limits(result: Mapping[str, Any] | None) -> str:
    info = result.get("limits") if isinstance(result, Mapping) and "limits" in result else result
    if not isinstance(info, Mapping):
        return "no spending caps (settings limits.maxCost / limits.maxTokens, or rpcctl limits --max-cost USD)"
    rows = [("session cost", f"{info.get('cost', 0):.4f} USD" + (f" of {info['maxCost']:.4f}"
                                                                  if "maxCost" in info else "")),
            ("session tokens", f"{info.get('tokens', 0):,}" + (f" of {info['maxTokens']:,}" if "maxTokens" in info
                                                             else ""))]
    if "costToday" in info or "maxCostPerDay" in info:
        rows.append(("today's cost", f"{info.get('costToday', 0):.4f} USD" + (
            f" of {info['maxCostPerDay']:.4f}" if "maxCostPerDay" in info else "")))
    if "tokensToday" in info or "maxTokensPerDay" in info:
        rows.append(("today's tokens", f"{info.get('tokensToday', 0):,}" + (
            f" of {info['maxTokensPerDay']:,}" if "maxTokensPerDay" in info else "")))
    if info.get("reached"):
        rows.append(("reached", f"{info['reached']}: the next model call will not happen"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


# -- the chat's commands -------------------------------------------------------------------------


@slash.command("undo", "[ENTRY] [--force]", "put back the files the last run changed (a preview first; ENTRY: "
               "an older checkpoint, /checkpoints lists them)")
async def _undo(chat: ChatContext, rest: str) -> None:
    words = rest.split()
    force = "--force" in words
    entry = next((w for w in words if not w.startswith("--")), None)
    preview = await chat.client.restore_checkpoint(entry, dry_run=True, force=force)
    chat.printer.result(preview, restore_report)
    if not preview.get("files") or not any(f.get("restorable") for f in preview["files"]):
        return
    chosen = await chat.reader.pick("restore these files?", [Choice("Yes, restore them"), Choice("No")])
    if chosen != 0:
        chat.printer.note("nothing restored")
        return
    chat.printer.result(await chat.client.restore_checkpoint(preview["entryId"], force=force), restore_report)


@slash.command("checkpoints", help="the file checkpoints of this session (what /undo can restore)")
async def _checkpoints(chat: ChatContext, rest: str) -> None:
    chat.printer.result(await chat.client.list_checkpoints(files=True), checkpoints)


@slash.command("search", "QUERY", 'search every stored session: words, "phrases", re:regex', while_streaming=True)
async def _search(chat: ChatContext, rest: str) -> None:
    if not rest.strip():
        raise slash.UsageProblem("usage: /search QUERY")
    chat.printer.result(await chat.client.search_sessions(rest), search_results)


@slash.command("limits", "[USD]", "the spending caps and what was spent (USD: cap this session's cost)",
               while_streaming=True)
async def _limits(chat: ChatContext, rest: str) -> None:
    if rest.strip():
        try:
            cap = float(rest)
        except ValueError:
            raise slash.UsageProblem("usage: /limits [USD]") from None
        chat.printer.result(await chat.client.set_limits(max_cost=cap), limits)
        return
    state = await chat.client.get_state()
    chat.printer.result({"limits": state.get("limits")}, limits)
