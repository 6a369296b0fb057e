"""Our reading of a session, in the same shape ``inspect.mjs`` gives for Pi's, and the comparison.

Compared exactly: header, session id, entry ids in file order, counts by type and role, leaf,
root->leaf path, roots, branch points (children in file order), labels, session name, and the
built context (message count, roles, thinking level, model and the messages themselves).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from rpcd.store import SessionManager
from rpcd.store.records import UNDEFINED

COMPARED_KEYS = (
    "header",
    "sessionId",
    "entryIds",
    "typeCounts",
    "roleCounts",
    "leafId",
    "pathIds",
    "roots",
    "branchPoints",
    "labels",
    "sessionName",
    "context",
)


def _plain(value: Any) -> Any:
    """JSON round trip: what a file or a wire would see (drops tuples, keeps key order)."""
    return json.loads(json.dumps(value))


def reading_of(manager: SessionManager) -> dict[str, Any]:
    """What ``inspect.mjs`` reports, computed from our ``SessionManager``."""
    entries = manager.get_entries()
    type_counts = Counter(str(entry.get("type")) for entry in entries)
    role_counts = Counter(
        str((entry.get("message") or {}).get("role")) for entry in entries if entry.get("type") == "message"
    )
    # ``.get("id")``: a hand-edited entry may have no id (Pi keeps it; its id reads as undefined/null).
    labels = {entry.get("id"): manager.get_label(entry.get("id")) for entry in entries}
    branch_points: dict[str, list[str]] = {}
    for entry in entries:
        children = manager.get_children(entry.get("id", UNDEFINED))
        if len(children) > 1:
            key = "undefined" if "id" not in entry else json.dumps(entry["id"]).strip('"')  # String(entry.id)
            branch_points[key] = [child.get("id") for child in children]
    context = manager.build_session_context()
    model = context.model
    reading: dict[str, Any] = _plain(
        {
            "header": manager.get_header(),
            "sessionId": manager.get_session_id(),
            "entryIds": [entry.get("id") for entry in entries],
            "typeCounts": dict(type_counts),
            "roleCounts": dict(role_counts),
            "leafId": manager.get_leaf_json_id(),
            "pathIds": [entry.get("id") for entry in manager.get_branch()],
            "roots": manager.get_roots(),
            "branchPoints": branch_points,
            "labels": {key: value for key, value in labels.items() if value is not None},
            "sessionName": manager.get_session_name(),
            "context": {
                "messageCount": len(context.messages),
                "roles": [message.get("role") for message in context.messages],
                "thinkingLevel": context.thinking_level,
                "model": None if model is None else {"provider": model.provider, "modelId": model.model_id},
                "messages": context.messages,
            },
        }
    )
    return reading


def reading_of_file(path: Path) -> dict[str, Any]:
    """Our reading of the file as a fresh process would see it (``SessionManager.open``)."""
    return reading_of(SessionManager.open(str(path)))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def differences(pi: dict[str, Any], ours: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per compared key, ``{"pi": ..., "ours": ...}`` where the two readings disagree."""
    found: dict[str, dict[str, Any]] = {}
    for key in COMPARED_KEYS:
        if key == "context":
            for sub in ("messageCount", "roles", "thinkingLevel", "model", "messages"):
                theirs, mine = pi.get("context", {}).get(sub), ours["context"][sub]
                if theirs != mine:
                    found[f"context.{sub}"] = {"pi": theirs, "ours": mine}
        elif pi.get(key) != ours[key]:
            found[key] = {"pi": pi.get(key), "ours": ours[key]}
    return found


def assert_pi_reads_as_we_do(pi: dict[str, Any], ours: dict[str, Any], path: Path) -> None:
    """Exact equality of the two readings, and Pi's open left the file's bytes alone."""
    assert "error" not in pi, f"Pi refused {path.name}: {pi['error']}"
    diff = differences(pi, ours)
    assert not diff, f"Pi 0.85.0 reads {path.name} differently:\n{json.dumps(diff, indent=1)[:6000]}"
    assert pi["sha256Before"] == pi["sha256After"], f"Pi's open modified {path.name}"
