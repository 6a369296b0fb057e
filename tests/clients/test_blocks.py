"""Tool blocks as a person reads them (``clients/blocks.py``): bash output streamed from the
daemon's tail snapshots without repeats, the exit code, the diff of an edit/write before it runs
(against the file as Pi's edit would apply it) and the daemon's diff after; Pi's fuzzy filter."""

from __future__ import annotations

from pathlib import Path

from rpcd.clients import blocks
from rpcd.clients.blocks import ToolBlock
from rpcd.clients.fuzzy import fuzzy_filter
from rpcd.clients.views import plain


def _text(lines: list[blocks.Line]) -> list[str]:
    return [plain(line) for line in lines]


def _snapshot(text: str) -> dict[str, object]:
    return {"content": [{"type": "text", "text": text}]}


def test_bash_output_streams_each_line_once_and_ends_with_the_exit_code() -> None:
    block = ToolBlock("bash", {"command": "make"})
    assert _text([blocks.header(block.name, block.args)]) == ["● bash  make"]
    assert _text(block.update(_snapshot(""))) == []
    assert _text(block.update(_snapshot("one\ntw"))) == ["  │ one"]  # an unfinished line waits
    assert _text(block.update(_snapshot("one\ntwo\nthree\n"))) == ["  │ two", "  │ three"]
    end = block.end(_snapshot("one\ntwo\nthree\nfour\n\nCommand exited with code 2"), is_error=True)
    assert _text(end) == ["  │ four", "  └ exit 2"]


def test_bash_output_after_the_tail_truncation_moved_continues_without_repeating() -> None:
    block = ToolBlock("bash", {"command": "seq 5"})
    block.update(_snapshot("1\n2\n3\n"))
    assert _text(block.update(_snapshot("2\n3\n4\n"))) == ["  │ 4"]  # the snapshot's head was cut
    assert _text(block.update(_snapshot("9\n10\n"))) == ["  │ … (earlier output cut)", "  │ 9", "  │ 10"]
    assert _text(block.end(_snapshot("9\n10\n"), is_error=False)) == ["  └ exit 0"]


def test_an_edit_shows_its_exact_diff_before_it_runs_and_does_not_repeat_it(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    block = ToolBlock("edit", {"path": "a.py", "edits": [{"oldText": "two", "newText": "TWO\nmore"}]})
    diff = _text(blocks.preview(block, str(tmp_path)))
    assert diff == ["  --- a.py", "  +++ a.py", "  @@ -1,3 +1,4 @@", "   one", "  -two", "  +TWO", "  +more",
                    "   three"]
    assert block.previewed
    done = block.end({"content": [{"type": "text", "text": "Successfully replaced 1 block(s) in a.py."}],
                      "details": {"diff": " 1 one\n-2 two\n+2 TWO\n+3 more\n 3 three"}}, is_error=False)
    assert _text(done) == ["  └ Successfully replaced 1 block(s) in a.py."]


def test_an_edit_already_applied_when_drawn_shows_the_daemons_diff_at_its_end(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\nTWO\n")  # the call ran before its start event was drawn
    block = ToolBlock("edit", {"path": "a.py", "edits": [{"oldText": "two", "newText": "TWO"}]})
    assert blocks.preview(block, str(tmp_path)) == [] and not block.previewed
    # an approval question still shows what is asked: each replacement's own diff
    assert "  -two" in _text(blocks.preview(block, str(tmp_path), approximate=True))
    done = block.end({"content": [{"type": "text", "text": "ok"}], "details": {"diff": " 1 one\n-2 two\n+2 TWO"}},
                     is_error=False)
    styles = [style for line in done for _, style in line]
    assert _text(done)[:3] == ["   1 one", "  -2 two", "  +2 TWO"] and "diff.del" in styles and "diff.add" in styles


def test_a_write_diffs_against_the_file_or_shows_a_new_file(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("old\n")
    replace = ToolBlock("write", {"path": "x.txt", "content": "new\n"})
    assert _text(blocks.preview(replace, str(tmp_path)))[3:] == ["  -old", "  +new"]
    create = ToolBlock("write", {"path": "y.txt", "content": "hello\n"})
    assert _text(blocks.preview(create, str(tmp_path)))[:2] == ["  --- y.txt (new file)", "  +++ y.txt (new file)"]


def test_other_tools_show_a_few_result_lines_and_errors_in_full() -> None:
    grep = ToolBlock("grep", {"pattern": "TODO", "path": "src"})
    assert _text([blocks.header(grep.name, grep.args)]) == ["● grep  TODO src"]
    many = "\n".join(f"src/{i}.py:1: TODO" for i in range(20))
    shown = _text(grep.end(_snapshot(many), is_error=False))
    assert len(shown) == blocks.OUTPUT_LINES + 1 and shown[-1] == "  │ … 8 more lines"
    failed = ToolBlock("read", {"path": "nope"}).end(_snapshot("ENOENT: no such file"), is_error=True)
    assert _text(failed) == ["  └ ENOENT: no such file"]


def test_fuzzy_filter_orders_as_pis() -> None:
    models = ["anthropic claude-sonnet-4-5", "openai gpt-4o", "openai gpt-4o-mini", "google gemini-2.5-pro"]
    assert fuzzy_filter(models, "gpt4o", str) == ["openai gpt-4o", "openai gpt-4o-mini"]
    assert fuzzy_filter(models, "4gpt", str) == ["openai gpt-4o", "openai gpt-4o-mini"]  # swapped order matches
    assert fuzzy_filter(models, "sonnet", str) == ["anthropic claude-sonnet-4-5"]
    assert fuzzy_filter(models, "openai mini", str) == ["openai gpt-4o-mini"]
    assert fuzzy_filter(models, "", str) == models and fuzzy_filter(models, "zzz", str) == []
