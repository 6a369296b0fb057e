"""Full-text search over sessions real Pi 0.85.0 wrote (its ``SessionManager`` running the corpus's
operation programs, so Pi chose every id, timestamp and byte) beside sessions in our generator's
shape, in one directory, through the index: every planted phrase finds exactly the sessions it was
planted in, and each snippet names an entry that holds it. 40 Pi-written sessions by default,
500 with ``RPCD_LONG=1``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rpcd.store.listing import recency_key
from rpcd.store.search import parse_query, sessions_in
from rpcd.store.search_index import SearchIndex
from tests.pi_compat.oracle import PiReader
from tests.store.search_corpus import generate

PI_WRITTEN = 500 if os.environ.get("RPCD_LONG") == "1" else 40


def test_planted_phrases_are_found_in_sessions_pi_wrote(pi_reader: PiReader, tmp_path: Path) -> None:
    directory = tmp_path / "sessions"
    ours = generate(directory, PI_WRITTEN, seed=5, cwd="/work/project")
    template = generate(tmp_path / "template", PI_WRITTEN, seed=6, cwd="/work/project")
    pi_files: dict[str, str] = {}
    for source in template.files:
        written = pi_reader.write("/work/project", str(directory), template.programs[source])
        assert written.get("file"), written
        pi_files[source] = str(written["file"])
    files = sessions_in([str(directory)])
    assert len(files) == 2 * PI_WRITTEN
    index = SearchIndex(str(tmp_path / "agent"))
    expected: dict[str, set[str]] = {}
    for plant in ours.plants:
        expected.setdefault(plant.phrase, set()).add(plant.session_file)
    for plant in template.plants:
        expected.setdefault(plant.phrase, set()).add(pi_files[plant.session_file])
    for phrase, wanted in expected.items():
        query = parse_query(f'"{phrase}"' if " " in phrase else phrase)
        hits, after = [], None
        while True:
            page = index.search(files, query, directories=[str(directory)], after=after, limit=50)
            hits.extend(page.hits)
            if not page.more:
                break
            after = recency_key(page.hits[-1].info)
        assert {h.info.path for h in hits} == wanted, phrase
        for hit in hits:
            if hit.info.path not in pi_files.values():
                continue
            lines = Path(hit.info.path).read_text().splitlines()[1:]
            by_id = {e["id"]: e for e in map(json.loads, lines)}
            for snippet in hit.snippets:
                assert snippet.entry_id in by_id, phrase
                text = " ".join(json.dumps(by_id[snippet.entry_id], ensure_ascii=False).lower().replace("\\n", " ")
                                .replace("\\t", " ").split())
                assert all(word in text for word in phrase.split()), (phrase, snippet)
    index.close()
