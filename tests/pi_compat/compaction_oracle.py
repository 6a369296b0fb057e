"""Both sides of the compaction differential: real Pi's functions (``compaction.mjs``, one Node
process for many requests) and ours, answering the same request in the same shape.

``prepare`` runs the whole chain for one session file and branch: per-entry token estimates,
the context estimate, ``findCutPoint``, ``shouldCompact``, ``prepareCompaction`` (messages to
summarize, file operations, ``tokensBefore``), ``serializeConversation`` and ``compact`` with a
model that records every summary request (system prompt, the user text, ``maxTokens``,
reasoning, cache retention) and answers ``summary <n>``. ``branch`` does the same for
``collectEntriesForBranchSummary`` / ``prepareBranchEntries`` / ``generateBranchSummary``.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from rpcd.core import codec
from rpcd.providers.base import ModelInfo, ProviderRequest, new_assistant_message
from rpcd.runtime.compaction import cut_point, prepare, serialize, summarize, tokens
from rpcd.runtime.compaction.branch import collect_entries_for_branch_summary, prepare_branch_entries
from rpcd.runtime.compaction.tokens import CompactionSettings
from rpcd.runtime.turns.retry import RetrySettings
from rpcd.store import SessionManager
from rpcd.store.context import build_session_context
from tests.pi_compat.oracle import OracleError, PiOracle

SCRIPT = Path(__file__).resolve().parent / "compaction.mjs"
TIMEOUT_S = 120.0

MODEL: dict[str, Any] = {"provider": "anthropic", "id": "claude-sonnet-4-5", "api": "anthropic-messages",
                         "name": "Claude", "reasoning": True, "contextWindow": 200_000, "maxTokens": 64_000,
                         "input": ["text", "image"]}


def model_info(model: Mapping[str, Any]) -> ModelInfo:
    return ModelInfo(provider=model["provider"], id=model["id"], name=model.get("name", model["id"]),
                     api=model["api"], reasoning=bool(model.get("reasoning")),
                     context_window=int(model.get("contextWindow", 0)), max_tokens=int(model.get("maxTokens", 0)))


class PiCompaction:
    """One Node process running ``compaction.mjs``."""

    def __init__(self, oracle: PiOracle) -> None:
        self._home = tempfile.TemporaryDirectory(prefix="rpcd-pi-compaction-")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self._home.name,
               "PI_CODING_AGENT_DIR": self._home.name, "PI_OFFLINE": "1", "PI_TELEMETRY": "0",
               "RPCD_PI_ORACLE_DIR": str(oracle.root)}
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self._process = subprocess.Popen([str(oracle.node), str(SCRIPT)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._stderr, env=env, cwd=self._home.name)
        self._pending = b""
        self._next = 0

    def ask(self, kind: str, request: Mapping[str, Any]) -> dict[str, Any]:
        self._next += 1
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps({"id": self._next, kind: request}).encode() + b"\n")
        self._process.stdin.flush()
        deadline = time.monotonic() + TIMEOUT_S
        fd = self._process.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OracleError("compaction.mjs gave no answer in time")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self._stderr.seek(0)
                    raise OracleError(f"compaction.mjs exited: {self._stderr.read()[-2000:].decode(errors='replace')}")
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        # read as JSON.parse reads it (an integer beyond 2^53 is a double), like our side's values
        answer: dict[str, Any] = codec.loads(line)
        if "crash" in answer:
            raise OracleError(f"compaction.mjs failed: {answer['crash']}")
        assert answer.pop("id") == self._next
        return answer

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()
        self._home.cleanup()


# -- our side ----------------------------------------------------------------------------------------


class RecordingProvider:
    """A provider answering every call like ``compaction.mjs``'s recorder and keeping the requests."""

    def __init__(self, model: ModelInfo, answers: Sequence[Mapping[str, Any]] | None = None) -> None:
        self.name = model.provider
        self._model = model
        self.answers = list(answers or [])
        self.requests: list[ProviderRequest] = []

    def models(self) -> list[ModelInfo]:
        return [self._model]

    async def stream(self, request: ProviderRequest) -> AsyncIterator[dict[str, Any]]:
        self.requests.append(request)
        n = len(self.requests)
        answer = self.answers[n - 1] if n - 1 < len(self.answers) else {"text": f"summary {n}"}
        message = new_assistant_message(request.model, [{"type": "text", "text": answer["text"]}])
        message["usage"] = {"input": 10 * n, "output": n, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 11 * n,
                            "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75}}
        message["stopReason"] = answer.get("stopReason", "stop")
        if answer.get("errorMessage"):
            message["errorMessage"] = answer["errorMessage"]
        message["timestamp"] = 0
        yield {"type": "start", "partial": dict(message)}
        if message["stopReason"] == "error":
            yield {"type": "error", "reason": "error", "error": message}
        else:
            yield {"type": "done", "reason": message["stopReason"], "message": message}

    def recorded(self) -> list[dict[str, Any]]:
        return [{"systemPrompt": r.system_prompt,
                 "messages": [{"role": m["role"], "content": m["content"]} for m in r.messages],
                 "tools": None if not r.tools else list(r.tools), "maxTokens": r.max_tokens,
                 "reasoning": None if r.thinking_level == "off" else r.thinking_level,
                 "cacheRetention": r.cache_retention, "hasSessionId": bool(r.session_id)} for r in self.requests]


def _settings(raw: Mapping[str, Any]) -> CompactionSettings:
    return CompactionSettings(enabled=raw["enabled"], reserve_tokens=raw["reserveTokens"],
                              keep_recent_tokens=raw["keepRecentTokens"])


def _plain(value: Any) -> Any:
    """What ``JSON.parse(JSON.stringify(value))`` gives (both sides compared as JSON)."""
    return codec.loads(codec.dumps(value))


def ours_prepare(request: Mapping[str, Any]) -> dict[str, Any]:
    sm = SessionManager.open(request["file"])
    path = sm.read_branch(lambda p: p, request.get("leafId"))
    settings = _settings(request["settings"])
    previous = prepare.last_compaction_index(path)
    start = prepare.summarized_span_start(path, previous)
    cut = cut_point.find_cut_point(path, start, len(path), settings.keep_recent_tokens)
    estimate = tokens.estimate_context_tokens(build_session_context(path).messages)
    out: dict[str, Any] = {
        "pathIds": [r.id for r in path], "boundaryStart": start,
        "cut": {"firstKeptEntryIndex": cut.first_kept_entry_index, "turnStartIndex": cut.turn_start_index,
                "isSplitTurn": cut.is_split_turn},
        "estimates": [cut_point.entry_tokens(r) for r in path],
        "context": {"tokens": estimate.tokens, "usageTokens": estimate.usage_tokens,
                    "trailingTokens": estimate.trailing_tokens, "lastUsageIndex": estimate.last_usage_index},
        "thresholds": [tokens.should_compact(t, w, settings) for t, w in request.get("thresholds", [])],
    }
    preparation = prepare.prepare_compaction(path, settings)
    if preparation is None:
        return {**out, "preparation": None}
    out["preparation"] = {
        "firstKeptEntryId": preparation.first_kept_entry_id, "isSplitTurn": preparation.is_split_turn,
        "tokensBefore": preparation.tokens_before, "previousSummary": preparation.previous_summary,
        "fileOps": preparation.file_ops.to_pi(),
        "messagesToSummarize": _plain(preparation.messages_to_summarize),
        "turnPrefixMessages": _plain(preparation.turn_prefix_messages),
    }
    out["serialized"] = serialize.serialize_conversation(serialize.llm_messages(preparation.messages_to_summarize))
    out["serializedPrefix"] = serialize.serialize_conversation(serialize.llm_messages(preparation.turn_prefix_messages))
    model = model_info(request["model"])
    provider = RecordingProvider(model, request.get("answers"))
    summarizer = summarize.Summarizer(provider=provider, model=model, thinking_level=request["thinkingLevel"],
                                      retry=RetrySettings(enabled=False, max_retries=0, base_delay_ms=0))
    try:
        out["result"] = _plain(anyio.run(summarize.compact, preparation, summarizer,
                                         request.get("customInstructions")))
    except summarize.SummaryError as exc:
        out["error"] = str(exc)
    out["requests"] = provider.recorded()
    return out


def ours_branch(request: Mapping[str, Any]) -> dict[str, Any]:
    sm = SessionManager.open(request["file"])
    collected = collect_entries_for_branch_summary(sm, request["oldLeafId"], request["targetId"])
    model = model_info(request["model"])
    budget = (model.context_window or 128_000) - request["reserveTokens"]
    prepared = prepare_branch_entries(collected.entries, budget)
    provider = RecordingProvider(model, request.get("answers"))
    summarizer = summarize.Summarizer(provider=provider, model=model,
                                      retry=RetrySettings(enabled=False, max_retries=0, base_delay_ms=0))

    async def run() -> dict[str, Any]:
        return await summarize.generate_branch_summary(
            collected.entries, summarizer, reserve_tokens=request["reserveTokens"],
            custom_instructions=request.get("customInstructions"),
            replace_instructions=request.get("replaceInstructions"))

    return {
        "entryIds": [e["id"] for e in collected.entries],
        "commonAncestorId": collected.common_ancestor_id,
        "prepared": {"messages": _plain(prepared.messages), "fileOps": prepared.file_ops.to_pi(),
                     "totalTokens": prepared.total_tokens},
        "result": _plain(anyio.run(run)),
        "requests": provider.recorded(),
    }
