"""The exported HTML, opened in a real headless Chromium: every message is on the screen, thinking and
tool calls are collapsed, the image is drawn, nothing is logged to the console, nothing is requested
but the file itself.

The session is a real one: the daemon runs a turn with thinking, tool calls (``read`` of AGENTS.md and
of an image) and tool results; the store then adds a second branch with a branch summary and a
compaction (no wire method makes those yet); a fresh daemon resumes the file and exports it.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rpcd.store import SessionManager
from tests.driver import Daemon
from tests.e2e.chromium import (
    Browser,
    Chromium,
    ChromiumUnavailable,
    browser,
    dominant_colour,
    ensure_chromium,
    ink,
)

BOXES = """JSON.stringify([...document.querySelectorAll(%s)].map(e => {
  const r = e.getBoundingClientRect();
  return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height, text: e.innerText,
          cls: e.className};
}))"""


@pytest.fixture(scope="module")
def chromium() -> Chromium:
    try:
        return ensure_chromium()
    except ChromiumUnavailable as exc:
        pytest.skip(f"no headless Chromium on this machine: {exc}")


@pytest.fixture
def tab_browser(chromium: Chromium) -> Iterator[Browser]:
    with browser(chromium) as opened:
        yield opened


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\0" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def boxes(page: Any, selector: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(page.evaluate(BOXES % json.dumps(selector)))
    return found


def exported_session(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project, agent = tmp_path / "project", tmp_path / "agent"
    project.mkdir()
    (project / "AGENTS.md").write_text("# Browser project\nAnswer <b>briefly</b> & kindly.\n")
    (project / "pixel.png").write_bytes(png(48, 48, (200, 30, 30)))
    script = [
        {"thinking": "I should read the project's rules first.", "text": "Let me read the rules.",
         "toolCall": {"name": "read", "arguments": {"path": "AGENTS.md"}}},
        {"toolCall": {"name": "read", "arguments": {"path": "pixel.png"}}},
        {"text": "The rules say: answer briefly. The picture is a red square."},
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    env = {"RPCD_FAUX_SCRIPT": str(tmp_path / "script.json")}
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env) as d:
        d.initialize()
        assert d.call("prompt", {"text": "What do the <rules> say?"}) == {"stopReason": "stop"}
        session_file = d.call("getState")["sessionFile"]
    # a second branch from the last tool result (the final answer is left behind), with a branch
    # summary and a compaction (store-made)
    sm = SessionManager.open(session_file)
    entries = sm.get_entries()
    assert entries[-1]["message"]["role"] == "assistant" and entries[-2]["message"]["role"] == "toolResult"
    fork_point = entries[-2]
    sm.branch_with_summary(fork_point["id"], "Tried reading the picture first; it was not needed.")
    sm.append_compaction("Earlier: the user asked about the rules; the assistant read AGENTS.md.",
                         entries[0]["id"], 4321)
    sm.append_message({"role": "user", "content": [{"type": "text", "text": "Summarize in one word."}],
                       "timestamp": 1})
    sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "Brevity."}], "timestamp": 2,
                       "stopReason": "stop", "provider": "faux", "model": "faux-1", "api": "faux"})
    sm.append_label_change(fork_point["id"], "fork point")
    sm.close()
    with Daemon("--agent-dir", str(agent), "--resume", session_file) as d:
        d.initialize()
        out = tmp_path / "export" / "session.html"
        out.parent.mkdir()
        assert d.call("exportHtml", {"outputPath": str(out)}) == {"path": str(out)}
    texts = {
        "user": "What do the <rules> say?",
        "thinking": "I should read the project's rules first.",
        "assistant": "Let me read the rules.",
        "tool result": "Answer <b>briefly</b> & kindly.",
        "off-branch answer": "The rules say: answer briefly. The picture is a red square.",
        "branch summary": "Tried reading the picture first; it was not needed.",
        "compaction": "Earlier: the user asked about the rules; the assistant read AGENTS.md.",
        "second user": "Summarize in one word.",
        "second answer": "Brevity.",
    }
    return out, texts


def test_the_exported_page_shows_every_message_in_chromium_and_loads_nothing(
    tmp_path: Path, tab_browser: Browser
) -> None:
    out, texts = exported_session(tmp_path)
    page = tab_browser.open(out.as_uri())
    (tmp_path / "screenshot.png").write_bytes(page.screenshot())  # kept with the test's files for a human
    body = page.evaluate("document.body.innerText")
    conversation = page.evaluate("document.querySelector('main').innerText")
    for name, text in texts.items():
        if name == "thinking":
            assert text not in body, "thinking is collapsed"
            assert text in page.evaluate("document.querySelector('details.thinking').textContent")
        elif name == "off-branch answer":
            assert text not in conversation and text[:40] in body  # only in the tree
        else:
            assert text in conversation, name
    # every entry of the current branch is drawn: its box on the screenshot has ink
    articles = boxes(page, "main article.entry")
    assert len(articles) >= 7
    for box in articles:
        assert box["width"] > 100 and box["height"] > 20, box
        assert ink(page.screenshot(box)) > 200, box["text"][:60]
    # the tree: one row per entry, the current branch marked, the leaf named current
    rows = boxes(page, "nav li.node")
    assert len(rows) == page.evaluate("document.querySelectorAll('nav li.node').length") and len(rows) > 10
    current = [r for r in rows if "current" in r["cls"]]
    assert len(current) == 1 and "current" in current[0]["text"] and ink(page.screenshot(current[0])) > 50
    assert any("fork point" in r["text"] for r in rows)
    # collapsed: thinking and tool calls; drawn: the image the read tool returned
    assert page.evaluate("[...document.querySelectorAll('details')].every(d => !d.open)") is True
    assert page.evaluate("document.querySelectorAll('details.thinking').length") == 1
    assert page.evaluate("document.querySelectorAll('details.tool-call').length") == 2
    image = boxes(page, "main img.image")
    assert len(image) == 1 and page.evaluate("document.querySelector('main img.image').naturalWidth") == 48
    red = dominant_colour(page.screenshot({**image[0], "width": 48, "height": 48}))
    assert abs(red[0] - 200) + abs(red[1] - 30) + abs(red[2] - 30) < 30, red  # the red square is drawn
    assert page.console_problems() == []
    # the file itself and its inline image (a data: URL); nothing from a network
    assert [url for url in page.requests() if not url.startswith("data:image/png;base64,")] == [out.as_uri()]


def test_the_browser_checks_do_see_console_errors_and_external_requests(tmp_path: Path, tab_browser: Browser) -> None:
    """The harness's own control: a page that logs an error and loads a remote image is caught."""
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><html><body><p>control</p><img src="http://127.0.0.1:9/x.png">'
                       '<script>console.error("boom")</script></body></html>')
    page = tab_browser.open(control.as_uri())
    assert any("boom" in problem for problem in page.console_problems())
    assert "http://127.0.0.1:9/x.png" in page.requests()
    blank = boxes(page, "img")[0]
    assert ink(page.screenshot({**blank, "width": max(blank["width"], 16), "height": max(blank["height"], 16)})) < 50
