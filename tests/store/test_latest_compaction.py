"""The latest compaction on the leaf's branch (every prompt's compaction check asks it twice): the
same answer as Pi's ``getLatestCompactionEntry(getBranch())``, from a walk that stops where the last
answer's leaf was. The random sequences of ``test_properties`` check it against the full branch
after every operation (``check_invariants``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rpcd.store import SessionManager

from .test_writing import ASSISTANT, USER


def _from_branch(sm: SessionManager) -> dict[str, Any] | None:
    return next((e for e in reversed(sm.get_branch()) if e["type"] == "compaction"), None)


class _CountingIndex(dict[Any, Any]):
    """The manager's id index, counting the lookups a walk makes."""

    lookups = 0

    def get(self, key: Any, default: Any = None) -> Any:
        self.lookups += 1
        return super().get(key, default)


def test_after_appends_the_walk_visits_only_the_new_records(tmp_path: Path) -> None:
    sm = SessionManager.create(str(tmp_path), str(tmp_path))
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    first_kept = sm.get_leaf_id()
    sm.append_compaction("early", first_kept, 10)
    for n in range(500):
        sm.append_message({**USER, "content": f"q{n}"})
        sm.append_message(ASSISTANT)
    index = _CountingIndex(sm._by_id)
    sm._by_id = index
    assert sm.latest_compaction() == _from_branch(sm)
    assert index.lookups > 1000  # the first question walks up to the compaction

    index.lookups = 0
    sm.append_message({**USER, "content": "one more"})
    sm.append_message(ASSISTANT)
    sm.append_custom_entry("ext", {"n": 1})
    latest = sm.latest_compaction()
    assert latest is not None and latest["summary"] == "early"
    assert index.lookups <= 4  # three new records, then the last answer's leaf

    index.lookups = 0
    sm.append_compaction("late", sm.get_leaf_id(), 20)
    assert sm.latest_compaction()["summary"] == "late"  # type: ignore[index]
    assert index.lookups <= 1


def test_a_leaf_moved_to_another_branch_gets_that_branchs_compaction(tmp_path: Path) -> None:
    sm = SessionManager.create(str(tmp_path), str(tmp_path))
    sm.append_message(USER)
    fork_point = sm.append_message(ASSISTANT)
    sm.append_compaction("on the main line", fork_point, 10)
    sm.append_message(USER)
    assert sm.latest_compaction()["summary"] == "on the main line"  # type: ignore[index]

    sm.branch(fork_point)  # before the compaction: none on this branch
    assert sm.latest_compaction() is None
    sm.append_message({**USER, "content": "side"})
    assert sm.latest_compaction() is None
    sm.reset_leaf()
    assert sm.latest_compaction() is None


def test_an_unreadable_compaction_line_on_the_branch_is_dropped_as_pi_drops_it(tmp_path: Path) -> None:
    sm = SessionManager.create(str(tmp_path), str(tmp_path))
    sm.append_message(USER)
    kept = sm.append_message(ASSISTANT)
    sm.append_compaction("readable", kept, 10)
    path = Path(str(sm.get_session_file()))
    # In Pi's compact shape, so it is indexed from its skeleton and its body is read only when asked
    # for; the body is not JSON. A readable message after it keeps it off the file's last line.
    skeleton = json.dumps({"type": "compaction", "id": "c0ffee00", "parentId": sm.get_leaf_id(),
                           "timestamp": "2026-12-04T00:00:00.000Z"}, separators=(",", ":"))
    broken = skeleton[:-1] + ',"summary":tru}'
    after = json.dumps({"type": "message", "id": "afterc0f", "parentId": "c0ffee00",
                        "timestamp": "2026-12-04T00:00:01.000Z", "message": USER}, separators=(",", ":"))
    with path.open("a") as out:
        out.write(broken + "\n" + after + "\n")
    reopened = SessionManager.open(str(path))
    assert reopened.get_leaf_id() == "afterc0f"
    assert not any("unreadable" in d.message for d in reopened.load_diagnostics)  # not read yet

    # Pi skipped the line on load: the leaf's parent is unknown, its branch is the leaf alone
    assert reopened.latest_compaction() is None
    assert any("unreadable" in d.message for d in reopened.load_diagnostics)
    assert reopened.latest_compaction() == _from_branch(reopened)
