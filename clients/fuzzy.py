"""Pi's fuzzy matching (pi-tui ``fuzzy.js``): ``rpcctl models SEARCH`` and the chat pickers.

A query matches when its characters appear in order; consecutive runs and word starts score
better (lower is better), an exact match best; ``gpt4`` also matches ``4gpt`` order-swapped
(a small penalty). Several tokens (split on spaces and ``/``) must all match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
_BOUNDARY = re.compile(r"[\s\-_./:]")
_LETTERS_DIGITS = re.compile(r"^([a-z]+)([0-9]+)$")
_DIGITS_LETTERS = re.compile(r"^([0-9]+)([a-z]+)$")


def _match(query: str, text: str) -> float | None:
    if not query:
        return 0.0
    if len(query) > len(text):
        return None
    at = 0
    score = 0.0
    last = -1
    run = 0
    for i, char in enumerate(text):
        if at >= len(query):
            break
        if char != query[at]:
            continue
        if last == i - 1:
            run += 1
            score -= run * 5
        else:
            run = 0
            if last >= 0:
                score += (i - last - 1) * 2
        if i == 0 or _BOUNDARY.match(text[i - 1]):
            score -= 10
        score += i * 0.1
        last = i
        at += 1
    if at < len(query):
        return None
    return score - 100 if query == text else score


def fuzzy_match(query: str, text: str) -> float | None:
    """The score of ``query`` in ``text`` (lower is better), ``None`` when it does not match."""
    query, text = query.lower(), text.lower()
    primary = _match(query, text)
    if primary is not None:
        return primary
    swapped = _LETTERS_DIGITS.match(query) or _DIGITS_LETTERS.match(query)
    if swapped is None:
        return None
    again = _match(swapped.group(2) + swapped.group(1), text)
    return None if again is None else again + 5


def fuzzy_filter(items: Sequence[T], query: str, text_of: Callable[[T], str]) -> list[T]:
    """The items every token of ``query`` matches, best first (all of them for an empty query)."""
    tokens = [t for t in re.split(r"[\s/]+", query.strip()) if t]
    if not tokens:
        return list(items)
    scored: list[tuple[float, int, T]] = []
    for index, item in enumerate(items):
        text = text_of(item)
        total = 0.0
        for token in tokens:
            score = fuzzy_match(token, text)
            if score is None:
                break
            total += score
        else:
            scored.append((total, index, item))
    scored.sort(key=lambda entry: (entry[0], entry[1]))
    return [item for _, _, item in scored]
