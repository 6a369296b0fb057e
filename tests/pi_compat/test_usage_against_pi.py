"""Token estimates (``rpcd.runtime.usage``) against Pi's ``estimateTokens`` /
``estimateContextTokens`` / ``calculateContextTokens``: every message kind, non-BMP text (JavaScript
counts UTF-16 units), images, tool calls, aborted and zero-usage replies skipped."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from rpcd.runtime.usage import calculate_context_tokens, estimate_context_tokens, estimate_tokens
from tests.pi_compat.oracle import PiOracle

SCRIPT = Path(__file__).resolve().with_name("usage.mjs")


def _usage(input_tokens: int, output: int, total: int | None = None) -> dict[str, Any]:
    usage = {"input": input_tokens, "output": output, "cacheRead": 3, "cacheWrite": 0,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    usage["totalTokens"] = total if total is not None else input_tokens + output + 3
    return usage


MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "plain string content, 41 characters long", "timestamp": 1},
    {"role": "user", "content": [{"type": "text", "text": "emoji 🐍🐍 and ü"}, {"type": "image", "data": "AAAA",
                                                                            "mimeType": "image/png"}], "timestamp": 2},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm " * 10}, {"type": "text", "text": "ok"},
                                      {"type": "toolCall", "id": "c", "name": "read",
                                       "arguments": {"path": "ä/b.txt", "n": [1, 2]}}],
     "api": "x", "provider": "p", "model": "m", "usage": _usage(900, 40), "stopReason": "toolUse", "timestamp": 3},
    {"role": "toolResult", "toolCallId": "c", "toolName": "read", "content": [{"type": "text", "text": "x" * 401}],
     "isError": False, "timestamp": 4},
    {"role": "bashExecution", "command": "ls -la", "output": "a\nb\n", "cancelled": False, "truncated": False,
     "timestamp": 5},
    {"role": "assistant", "content": [], "api": "x", "provider": "p", "model": "m", "usage": _usage(0, 0, 0),
     "stopReason": "aborted", "errorMessage": "Request was aborted", "timestamp": 6},
    {"role": "custom", "customType": "note", "content": "from an extension", "display": True, "timestamp": 7},
    {"role": "compactionSummary", "summary": "s" * 77, "tokensBefore": 5, "timestamp": 8},
    {"role": "branchSummary", "summary": "b" * 9, "fromId": "x", "timestamp": 9},
    {"role": "assistant", "content": [{"type": "text", "text": "𝄞 clef"}], "api": "x", "provider": "p", "model": "m",
     "usage": _usage(1500, 20, 0), "stopReason": "stop", "timestamp": 10},
    {"role": "user", "content": [{"type": "text", "text": "after the last reply"}], "timestamp": 11},
]


def test_token_estimates_match_pi(pi_oracle: PiOracle) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RPCD_PI_ORACLE_DIR": str(pi_oracle.root)}
    done = subprocess.run([str(pi_oracle.node), str(SCRIPT)], input=json.dumps({"messages": MESSAGES}),
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    pi = json.loads(done.stdout)
    assert [estimate_tokens(m) for m in MESSAGES] == pi["perMessage"]
    assert [estimate_context_tokens(MESSAGES[: i + 1]) for i in range(len(MESSAGES))] == pi["prefixes"]
    assert [calculate_context_tokens(m["usage"]) for m in MESSAGES if "usage" in m] == pi["usage"]
