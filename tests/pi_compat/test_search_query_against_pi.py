"""The query syntax of ``searchSessions`` is Pi 0.85.0's session picker's: the same queries through
Pi's own ``parseSearchQuery`` (run by the oracle) and ours give the same tokens, the same regex
mode and the same refusals; phrases and regular expressions match the same texts. Bare words
are where we differ on purpose (a substring here, a fuzzy subsequence in Pi: docs/pi-compat.md),
so a word-only query is compared on the tokens only, and so are anchors of a regular expression
(``^``/``$`` anchor to each message here, to Pi's one string of id, name, every text and cwd)."""

from __future__ import annotations

import random

from rpcd.store.listing import SessionInfo
from rpcd.store.search import QueryError, SessionText, Unit, match_session, parse_query
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_text import pi_search

HAND = [
    "", "  ", "foo", "foo bar", '"foo bar"', 'a "b c" d', '"unclosed', 'x"y z', '"" x', '"a""b"', '"  padded  "',
    "re:", "re:   ", "re:fo+", "re:(unclosed", "RE:foo", " re:a|b ", 're:"quoted"', "tab\tsep", "new\nline",
    '"tab\tin phrase"', "üñí \"çødé ß\"", "re:[a-z]{3}\\d", "re:^start", 'one "two three" "four"',
]
TEXTS = ["Foo  Bar baz", "the quick\nbrown fox", "fooxbar", "b c", "tab in phrase", "START here", "abc1",
         "çødé ß and üñí", "two three four one", "padded", "x", "nothing"]


def _random_queries(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = ['"', " ", " ", "\t", "a", "b", "foo", "bar", "re:", "x", "\n", "ß"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(count)]


def _info() -> SessionInfo:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    return SessionInfo(path="", id="", cwd="", name=None, parent_session_path=None, created=now, modified=now,
                       message_count=0, first_message="")


def test_queries_parse_as_pis_picker_parses_them(pi_oracle: PiOracle) -> None:
    queries = HAND + _random_queries(36, 300)
    theirs = pi_search(pi_oracle, queries, TEXTS)
    for query, pi in zip(queries, theirs, strict=True):
        try:
            parsed = parse_query(query)
        except QueryError:
            assert pi["error"] is not None, query
            continue
        assert pi["error"] is None, query
        assert ("regex" if parsed.regex is not None else "tokens") == pi["mode"], query
        kinds = {"word": "fuzzy", "phrase": "phrase"}
        assert [[kinds[t.kind], t.value] for t in parsed.tokens] == pi["tokens"], query
        if parsed.regex is None and any(t.kind == "word" for t in parsed.tokens):
            continue  # bare words: substring here, fuzzy in Pi (on purpose)
        if parsed.regex is not None and ("^" in parsed.regex.pattern or "$" in parsed.regex.pattern):
            continue  # anchors: a message's text here, the id + name + all text + cwd string in Pi (on purpose)
        for text, matched in zip(TEXTS, pi["matches"], strict=True):
            session = SessionText(_info(), (Unit("e", "user", " ".join(text.split())),))
            assert (match_session(session, parsed) is not None) == matched, (query, text)
