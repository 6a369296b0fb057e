"""The exported HTML page (``rpcd.store.export_html``): what it shows, that everything is escaped, that it
loads and runs nothing, and that a long session does not recurse."""

from __future__ import annotations

import html.parser
import re
from typing import Any

from rpcd.store import SessionManager
from rpcd.store.export_html import HtmlExport, render_html

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'


class Page(html.parser.HTMLParser):
    """Every tag with its attributes, and the text of the page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    return parser


def export_of(manager: SessionManager, **kwargs: Any) -> HtmlExport:
    return HtmlExport(header=manager.get_header(), entries=manager.get_entries(), leaf_id=manager.get_leaf_json_id(),
                      labels=manager.get_labels(), name=manager.get_session_name(), **kwargs)


def conversation(tmp: str) -> SessionManager:
    sm = SessionManager.in_memory(tmp)
    sm.append_message({"role": "user", "timestamp": 1, "content": [
        {"type": "text", "text": "first question " + EVIL},
        {"type": "image", "mimeType": "image/png", "data": PNG},
        {"type": "image", "mimeType": "text/html", "data": PNG},
        {"type": "image", "mimeType": "image/png", "data": 'AAAA" onload="alert(1)'},
    ]})
    sm.append_message({"role": "assistant", "timestamp": 2, "stopReason": "toolUse", "provider": "faux",
                       "model": "faux-1", "content": [
                           {"type": "thinking", "thinking": "private reasoning"},
                           {"type": "text", "text": "let me look"},
                           {"type": "toolCall", "id": "call-1", "name": "read", "arguments": {"path": "AGENTS.md"}},
                       ]})
    sm.append_message({"role": "toolResult", "toolCallId": "call-1", "toolName": "read", "isError": False,
                       "timestamp": 3, "content": [{"type": "text", "text": "# Project rules"}]})
    first_answer = sm.append_message({"role": "assistant", "timestamp": 4, "stopReason": "stop",
                                      "content": [{"type": "text", "text": "abandoned answer"}]})
    sm.branch(sm.get_branch()[2]["id"])  # back to the tool result: the first answer is left behind
    sm.branch_with_summary(sm.get_leaf_id(), "summary of the branch left behind")
    sm.append_compaction("summary of what came before", None, 1234)
    sm.append_message({"role": "assistant", "timestamp": 5, "stopReason": "stop",
                       "content": [{"type": "text", "text": "current answer"}]})
    sm.append_label_change(first_answer, "old try")
    return sm


def test_the_page_shows_the_current_branch_and_the_whole_tree(tmp_path: Any) -> None:
    sm = conversation(str(tmp_path))
    page = render_html(export_of(sm, system_prompt="You are helpful " + EVIL, tools=[{"name": "read",
                                                                                       "description": "Read"}]))
    parsed = parse(page)
    text = "".join(parsed.text)
    for shown in ("first question " + EVIL, "private reasoning", "let me look", '{"path":"AGENTS.md"}',
                  "# Project rules", "summary of the branch left behind", "summary of what came before",
                  "current answer", "You are helpful " + EVIL):
        assert shown in text, shown
    # the abandoned answer is in the tree, not in the conversation
    main = page[page.index('<main id="conversation">'):]
    assert "abandoned answer" not in main and "abandoned answer" in page[: page.index("<main")]
    rows = [attrs for tag, attrs in parsed.tags if tag == "li" and "node" in (attrs.get("class") or "")]
    assert len(rows) == len(sm.get_entries())
    current = [attrs for attrs in rows if "current" in (attrs.get("class") or "")]
    assert len(current) == 1 and "on-branch" in (current[0].get("class") or "")
    on_branch = [attrs for attrs in rows if "on-branch" in (attrs.get("class") or "")]
    assert len(on_branch) == len(sm.get_branch())
    # thinking and tool calls are collapsed; tool results are shown
    details = [attrs.get("class") for tag, attrs in parsed.tags if tag == "details"]
    assert "thinking" in details and "tool-call" in details and all("open" not in a for t, a in parsed.tags
                                                                        if t == "details")
    assert any("tool-result" in (attrs.get("class") or "") for tag, attrs in parsed.tags if tag == "article")
    assert "old try" in text  # the label


def test_nothing_in_the_session_becomes_markup_and_the_page_loads_and_runs_nothing(tmp_path: Any) -> None:
    sm = conversation(str(tmp_path))
    sm.append_session_info('</title><script>alert("name")</script>')
    page = render_html(export_of(sm, system_prompt=EVIL))
    parsed = parse(page)
    assert [tag for tag, _ in parsed.tags if tag in ("script", "iframe", "object", "embed", "link", "base")] == []
    for tag, attrs in parsed.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        for name in ("src", "href"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith(("data:image/png;base64,", "#")), value
    images = [attrs["src"] for tag, attrs in parsed.tags if tag == "img"]
    assert images == [f"data:image/png;base64,{PNG}"]  # the other two are notes
    assert "[image omitted" in "".join(parsed.text)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None and "default-src 'none'" in policy.group(1)
    assert "http://" not in page and "https://" not in page


def test_a_long_session_renders_without_recursing(tmp_path: Any) -> None:
    sm = SessionManager.in_memory(str(tmp_path))
    for n in range(6000):
        sm.append_message({"role": "user" if n % 2 == 0 else "assistant", "timestamp": n,
                           "content": [{"type": "text", "text": f"message {n}"}]})
    page = render_html(export_of(sm))
    assert page.count('<li class="node on-branch') == 6000
    assert "message 5999" in page
    assert 'padding-left:0.0em' in page and "padding-left:1.2em" not in page  # a chain is not indented


def test_an_empty_session_and_one_after_reset_leaf(tmp_path: Any) -> None:
    sm = SessionManager.in_memory(str(tmp_path))
    assert "Current branch" in render_html(export_of(sm))
    sm.append_message({"role": "user", "timestamp": 1, "content": "only"})
    sm.reset_leaf()
    page = render_html(export_of(sm))
    assert page.count("<article") == 0 and "only" in page  # in the tree, no branch
