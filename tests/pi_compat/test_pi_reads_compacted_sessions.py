"""Files our compaction and tree navigation wrote (manual and automatic compactions, an overflow
recovery, branch summaries, labels) open in real Pi 0.85.0 with the same tree, leaf, labels and
context as in our store; and Pi, continuing from that file, would compact the same way we do
(its ``prepareCompaction`` over our compaction entries matches ours)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.pi_compat.compaction_oracle import MODEL, PiCompaction, ours_prepare
from tests.pi_compat.oracle import PiOracle, PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of_file
from tests.runtime.compaction._world import world

pytestmark = [pytest.mark.anyio, pytest.mark.node]

OVERFLOW = "prompt is too long: 9000 tokens > 8000 maximum"


async def test_pi_reads_our_compactions_branch_summaries_and_labels(pi_reader: PiReader, pi_oracle: PiOracle,
                                                                     tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        (w.project / "f.py").write_text("print('hi')\n")
        w.faux.push({"toolCall": {"name": "read", "arguments": {"path": "f.py"}}}, {"text": "read it"})
        await w.session.prompt("read f.py")
        await w.long_turns(5)
        w.faux.push({"text": "manual summary"})
        await w.session.compact("keep the file names")
        await w.long_turns(3)
        w.faux.push({"text": "", "stopReason": "error", "errorMessage": OVERFLOW}, {"text": "overflow summary"},
                    {"text": "prefix summary"}, {"text": "recovered"})
        await w.session.prompt("a question that overflows " + "o" * 400)
        entries = w.session.session_manager.get_entries()
        users = [e["id"] for e in entries if e["type"] == "message" and e["message"]["role"] == "user"]
        w.faux.push({"text": "what the branch did"})
        await w.session.navigate_tree(users[-3], summarize=True, label="back here")
        w.faux.push({"text": "on the new branch"})
        await w.session.prompt("a different direction")
        w.session.set_label(users[0], "the start")
        file = Path(str(w.session.session_file))
    finally:
        await w.close()
    kinds = [e["type"] for e in entries]
    assert kinds.count("compaction") == 2
    (pi,) = pi_reader.inspect([file])
    assert_pi_reads_as_we_do(pi, reading_of_file(file), file)
    assert pi["typeCounts"]["branch_summary"] == 1 and pi["labels"][users[0]] == "the start"
    compaction = PiCompaction(pi_oracle)
    try:
        request = {"file": str(file), "settings": {"enabled": True, "reserveTokens": 2_000, "keepRecentTokens": 300},
                   "model": MODEL, "thinkingLevel": "off"}
        theirs = compaction.ask("prepare", request)
    finally:
        compaction.close()
    ours = await anyio.to_thread.run_sync(ours_prepare, request)  # it runs its own event loop
    assert theirs["preparation"] is not None
    for key in ("cut", "preparation", "serialized", "serializedPrefix", "requests", "result"):
        assert ours[key] == theirs[key], key
