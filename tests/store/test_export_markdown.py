"""A session's branch as Markdown: the conversation in order, each tool call folded together with its
result, nothing that can break out of its fence, long output cut with a note, secrets redacted."""

from __future__ import annotations

from typing import Any

from rpcd.store.export_markdown import MAX_RESULT_LINES, MarkdownExport, render_markdown

HEADER = {"type": "session", "version": 3, "id": "0199c82c-c41c-780a-8b4b-0c26a0825acb",
          "timestamp": "2025-10-09T08:53:21.052Z", "cwd": "/work/project"}


def entry(entry_id: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2025-10-09T08:53:22.000Z",
            "message": message}


def branch(result_text: str = "file1\nfile2", *, is_error: bool = False) -> list[dict[str, Any]]:
    return [
        {"type": "model_change", "id": "m1", "parentId": None, "timestamp": "2025-10-09T08:53:21.100Z",
         "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
        entry("u1", "m1", {"role": "user", "content": [{"type": "text", "text": "List the files, please"}]}),
        entry("a1", "u1", {"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5",
                           "stopReason": "toolUse", "content": [
                               {"type": "thinking", "thinking": "I should run ls"},
                               {"type": "text", "text": "Running `ls`."},
                               {"type": "toolCall", "id": "call1", "name": "bash",
                                "arguments": {"command": "ls -1"}}]}),
        entry("r1", "a1", {"role": "toolResult", "toolCallId": "call1", "toolName": "bash", "isError": is_error,
                           "content": [{"type": "text", "text": result_text}]}),
        entry("a2", "r1", {"role": "assistant", "content": [{"type": "text", "text": "Two files."}],
                           "stopReason": "stop"}),
    ]


def test_the_conversation_reads_in_order_with_each_tool_call_folded_with_its_result() -> None:
    text = render_markdown(MarkdownExport(header=HEADER, branch=branch(), name="Listing files"))
    assert text.startswith("# Listing files\n")
    assert text.index("List the files, please") < text.index("Running `ls`.") < text.index("Two files.")
    fold = text[text.index("<summary>🔧 bash: ls -1</summary>"):]
    fold = fold[:fold.index("</details>")]
    assert "```sh\nls -1\n```" in fold and "file1\nfile2" in fold  # the call and its result, together
    assert text.count("file1") == 1  # the toolResult message is not repeated on its own
    assert "<summary>Thinking</summary>" in text
    assert "_Model: `anthropic/claude-sonnet-4-5`_" in text


def test_content_never_closes_its_own_fence_and_html_in_titles_is_escaped() -> None:
    nasty = "before\n```\n</details><script>x</script>\n````\nafter"
    parts = branch(nasty)
    parts[2]["message"]["content"][2]["arguments"] = {"command": "echo '<b>`hi`</b>'"}
    text = render_markdown(MarkdownExport(header=HEADER, branch=parts))
    assert "`````\nbefore\n```\n</details><script>x</script>\n````\nafter\n`````" in text
    assert "<summary>🔧 bash: echo '&lt;b&gt;`hi`&lt;/b&gt;'</summary>" in text


def test_long_output_is_cut_with_a_note_and_a_failed_call_is_marked() -> None:
    lines = "\n".join(f"line {i}" for i in range(MAX_RESULT_LINES + 50))
    text = render_markdown(MarkdownExport(header=HEADER, branch=branch(lines, is_error=True)))
    assert f"line {MAX_RESULT_LINES - 1}\n" in text and f"line {MAX_RESULT_LINES}\n" not in text
    assert "_… 50 more lines not shown._" in text
    assert "<summary>❌ bash: ls -1</summary>" in text and "**Result (error):**" in text


def test_secrets_in_the_transcript_are_redacted() -> None:
    parts = branch("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345")
    text = render_markdown(MarkdownExport(header=HEADER, branch=parts))
    assert "sk-proj-abcdefghijklmnop" not in text and "[REDACTED]" in text


def test_a_checkpoint_entry_is_a_one_line_note() -> None:
    parts = [*branch(), {"type": "custom", "id": "c1", "parentId": "a2", "timestamp": "2025-10-09T08:53:23.000Z",
                         "customType": "rpcd.checkpoint", "data": {"id": "01ab", "kind": "git", "reason": "run"}}]
    text = render_markdown(MarkdownExport(header=HEADER, branch=parts))
    assert "_📸 Checkpoint (git tree) before the agent changed files: `01ab`_" in text
