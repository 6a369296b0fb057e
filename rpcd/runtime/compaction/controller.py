"""One session's compaction and tree navigation, as Pi 0.85.0's ``AgentSession`` runs them.

Entry points (Pi's names in brackets):

* ``compact(custom_instructions)`` [``compact``] — manual: aborts the running turn first, then
  ``compaction_start {reason: "manual"}`` … ``compaction_end``; raises ``CompactionError`` /
  ``CompactionCancelledError`` when nothing was written.
* ``check(assistant)`` [``_checkCompaction``] — automatic, after a run (``SessionRetry.after_run``)
  and before a prompt: a context overflow from the same model is compacted and the turn
  retried once (``reason: "overflow"``, ``willRetry: true``; the failed reply stays in the
  file, not in the context); otherwise the threshold
  ``contextTokens > contextWindow - reserveTokens`` compacts without a retry.
* ``before_next_turn(messages)`` [``_compactBeforeNextAssistantResponse``] — between tool
  rounds, before the next model call.
* ``navigate_tree(...)`` [``navigateTree``] — moves the leaf within the same file; with
  ``summarize`` appends a ``branch_summary`` of the branch being left, at the target.

Extension events: ``session_before_compact`` (``{cancel: true}`` or ``{compaction: {summary,
firstKeptEntryId, tokensBefore, usage?, details?}}``), ``session_compact``,
``session_compact_failed``, ``session_before_tree`` (``{cancel}``, ``{summary: {summary,
details?, usage?}}``, ``customInstructions`` / ``replaceInstructions`` / ``label``
overrides) and ``session_tree``. An abort during any of it leaves the session exactly as it
was: nothing is appended before the summary is complete and the abort has been checked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from rpcd.core.codec import JsonValueError, to_json
from rpcd.core.errors import (
    CompactionCancelledError,
    CompactionError,
    InvalidEntryError,
    SessionBusyError,
    SessionWriteError,
)
from rpcd.core.jstext import content_text
from rpcd.providers.base import ModelInfo, Provider
from rpcd.providers.failures import context_overflow, is_recoverable_length
from rpcd.runtime.compaction.tokens import (
    CompactionSettings,
    branch_summary_reserve_tokens,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_messages_tokens,
    should_compact,
)
from rpcd.runtime.turns.retry import RetrySettings
from rpcd.store import SessionManager
from rpcd.store import entries as E
from rpcd.store._ids import js_date_ms
from rpcd.store.records import Record
from rpcd.tools.base import AbortSignal

if TYPE_CHECKING:
    from rpcd.runtime.compaction.prepare import CompactionPreparation
    from rpcd.runtime.compaction.summarize import Summarizer

# What a compaction or a branch summary runs (``prepare``, ``summarize``, ``branch`` and what they
# import: the serializer, the prompts, the LLM message transform) is imported by the first one: a
# session's construction, and so the daemon's first answer, only needs the controller.

_log = logging.getLogger("rpcd.runtime.compaction")

NO_MODEL = "No model selected"
OVERFLOW_RETRY_FAILED = ("Context overflow recovery failed after one compact-and-retry attempt. Try reducing "
                         "context or switching to a larger-context model.")
LENGTH_RETRY_FAILED = "Truncated response recovery failed after one compact-and-retry attempt."


class CompactionHost(Protocol):
    """What the controller uses of its ``AgentSession``."""

    @property
    def session_manager(self) -> SessionManager: ...
    @property
    def agent(self) -> Any: ...
    @property
    def is_streaming(self) -> bool: ...
    def settings(self) -> Any: ...
    def notify(self, event: dict[str, Any]) -> None: ...
    @property
    def extension_runner(self) -> Any: ...
    async def abort(self) -> None: ...
    def refuse_over_limit(self, what: str) -> None:
        """Raise ``CompactionError`` when a spending cap is reached (a summary is a model call)."""


class _Cancelled(Exception):
    """Internal: the compaction was aborted or an extension cancelled it."""


class _Run:
    """One compaction or branch summary in flight: its abort signal and its model calls."""

    def __init__(self) -> None:
        self.signal = AbortSignal()
        self.summarizer: Summarizer | None = None

    def abort(self) -> None:
        self.signal.abort()
        if self.summarizer is not None:
            self.summarizer.abort()


class SessionCompaction:
    def __init__(self, session: CompactionHost) -> None:
        self._session = session
        self._manual: _Run | None = None
        self._auto: _Run | None = None
        self._branch: _Run | None = None
        self._idle = anyio.Event()
        self._idle.set()
        self.enabled_override: bool | None = None
        """``setAutoCompaction`` (kept for the daemon's life, handed to replacement sessions)."""
        self.overflow_recovery_attempted = False

    # -- state ----------------------------------------------------------------------------------

    @property
    def is_compacting(self) -> bool:
        """Pi's ``isCompacting``: a compaction (manual or automatic) or a branch summary is running."""
        return self._manual is not None or self._auto is not None or self._branch is not None

    @property
    def manual_running(self) -> bool:
        return self._manual is not None

    def settings(self) -> CompactionSettings:
        return CompactionSettings.from_settings(self._session.settings(), enabled=self.enabled_override)

    @property
    def auto_enabled(self) -> bool:
        """``settings().enabled`` without building the settings (``getState`` asks it every call)."""
        if self.enabled_override is not None:
            return self.enabled_override
        return CompactionSettings.enabled_in(self._session.settings())

    def set_auto_enabled(self, enabled: bool) -> None:
        self.enabled_override = enabled

    def abort(self) -> None:
        """Pi's ``abortCompaction`` + ``abortBranchSummary``."""
        for run in (self._manual, self._auto, self._branch):
            if run is not None:
                run.abort()

    async def wait_idle(self) -> None:
        while self.is_compacting:
            await self._idle.wait()

    def _begin(self, slot: str) -> _Run:
        run = _Run()
        setattr(self, slot, run)
        self._idle = anyio.Event()
        return run

    def _end(self, slot: str, run: _Run) -> None:
        if getattr(self, slot) is run:
            setattr(self, slot, None)
        if not self.is_compacting:
            self._idle.set()

    # -- helpers ---------------------------------------------------------------------------------

    def _notify(self, event: dict[str, Any]) -> None:
        self._session.notify(event)

    def _runner(self) -> Any:
        runner = self._session.extension_runner
        if runner is None or runner.is_invalidated:
            return None
        return runner

    async def _emit_extension(self, event: dict[str, Any]) -> Any:
        runner = self._runner()
        if runner is None or not runner.has_handlers(event["type"]):
            return None
        return await runner.emit(event)

    def _model(self) -> tuple[Provider, ModelInfo] | None:
        agent = self._session.agent
        if agent.provider is None or agent.model is None:
            return None
        return agent.provider, agent.model

    def _summarizer(self, run: _Run, provider: Provider, model: ModelInfo, source: dict[str, Any],
                    thinking_level: str) -> Summarizer:
        from rpcd.runtime.compaction.summarize import Summarizer

        summarizer = Summarizer(provider=provider, model=model, thinking_level=thinking_level,
                                retry=RetrySettings.from_settings(self._session.settings()),
                                on_event=self._notify, source=source)
        run.summarizer = summarizer
        if run.signal.aborted:
            summarizer.abort()
        return summarizer

    def _prepare(self, settings: CompactionSettings) -> tuple[CompactionPreparation | None, str | None]:
        from rpcd.runtime.compaction.prepare import prepare_compaction

        def read(path: list[Record]) -> tuple[CompactionPreparation | None, str | None]:
            return prepare_compaction(path, settings), (path[-1].type if path else None)

        result: tuple[CompactionPreparation | None, str | None] = self._session.session_manager.read_branch(read)
        return result

    async def _extension_compaction(self, preparation: CompactionPreparation, run: _Run, reason: str,
                                    will_retry: bool, custom_instructions: str | None) -> dict[str, Any] | None:
        """``session_before_compact``: ``None`` (default summary), the extension's compaction, or
        ``_Cancelled``."""
        runner = self._runner()
        if runner is None or not runner.has_handlers("session_before_compact"):
            return None
        event: dict[str, Any] = {
            "type": "session_before_compact", "preparation": preparation.to_pi(),
            "branchEntries": self._session.session_manager.get_branch(), "reason": reason, "willRetry": will_retry,
            "signal": run.signal,
        }
        if custom_instructions is not None:
            event["customInstructions"] = custom_instructions
        result = await runner.emit(event)
        if _field(result, "cancel"):
            raise _Cancelled
        supplied = _field(result, "compaction")
        if not supplied:
            return None
        try:
            compaction = to_json(dict(supplied)) if isinstance(supplied, Mapping) else None
        except JsonValueError as exc:
            raise CompactionError(f"session_before_compact returned a compaction that is not JSON: {exc.reason} "
                                  f"at {exc.path}") from None
        if not isinstance(compaction, dict) or not isinstance(compaction.get("summary"), str) \
                or not isinstance(compaction.get("firstKeptEntryId"), str) \
                or not _is_number(compaction.get("tokensBefore")):
            raise CompactionError("session_before_compact returned a compaction without a string summary, a "
                                  "firstKeptEntryId and a numeric tokensBefore")
        return compaction

    def _append(self, compaction: Mapping[str, Any], from_extension: bool) -> tuple[dict[str, Any], int]:
        """Write the compaction entry and rebuild the model's context from the file's view."""
        sm = self._session.session_manager
        entry_id = sm.append_compaction(
            compaction["summary"], compaction["firstKeptEntryId"], compaction["tokensBefore"],
            compaction.get("details"), from_extension, compaction.get("usage"),
        )
        messages = list(sm.build_session_context().messages)
        self._session.agent.messages = messages
        entry = sm.get_entry(entry_id) or {}
        self._notify({"type": "entry_appended", "entry": entry})
        return entry, estimate_messages_tokens(messages)

    async def _summarize(self, run: _Run, preparation: CompactionPreparation, custom_instructions: str | None,
                         reason: str) -> dict[str, Any]:
        found = self._model()
        if found is None:
            raise CompactionError(NO_MODEL)
        provider, model = found
        self._session.refuse_over_limit("the compaction summary")  # automatic ones too: every model call
        summarizer = self._summarizer(run, provider, model, {"source": "compaction", "reason": reason},
                                      self._session.agent.thinking_level)
        from rpcd.runtime.compaction.summarize import compact

        return await compact(preparation, summarizer, custom_instructions)

    # -- manual ---------------------------------------------------------------------------------

    async def compact(self, custom_instructions: str | None = None) -> dict[str, Any]:
        """Pi's ``compact``: the ``compact`` result (``summary, firstKeptEntryId, tokensBefore,
        estimatedTokensAfter, usage?, details?``)."""
        from rpcd.runtime.compaction.summarize import SummaryError

        await self._session.abort()
        run = self._begin("_manual")
        self._notify({"type": "compaction_start", "reason": "manual"})
        from_extension = False
        try:
            if self._model() is None:
                raise CompactionError(NO_MODEL)
            preparation, last_type = self._prepare(self.settings())
            if preparation is None:
                raise CompactionError("Already compacted" if last_type == E.COMPACTION
                                      else "Nothing to compact (session too small)")
            supplied = await self._extension_compaction(preparation, run, "manual", False, custom_instructions)
            from_extension = supplied is not None
            compaction = supplied if supplied is not None else await self._summarize(
                run, preparation, custom_instructions, "manual")
            if run.signal.aborted:
                raise _Cancelled
            entry, tokens_after = self._append(compaction, from_extension)
            await self._emit_extension({"type": "session_compact", "compactionEntry": entry,
                                        "fromExtension": from_extension, "reason": "manual", "willRetry": False})
            result = _result(compaction, tokens_after)
            self._end("_manual", run)
            self._notify({"type": "compaction_end", "reason": "manual", "result": result, "aborted": False,
                          "willRetry": False})
            return result
        except (_Cancelled, SummaryError, CompactionError, SessionWriteError) as exc:
            aborted = isinstance(exc, _Cancelled | CompactionCancelledError)
            message = "Compaction cancelled" if aborted else str(exc)
            error_message = None if aborted else f"Compaction failed: {message}"
            self._end("_manual", run)
            end: dict[str, Any] = {"type": "compaction_end", "reason": "manual", "aborted": aborted,
                                   "willRetry": False}
            if error_message is not None:
                end["errorMessage"] = error_message
            self._notify(end)
            await self._emit_failed("manual", error_message, aborted, False, from_extension)
            if isinstance(exc, SessionWriteError):
                raise
            if aborted:
                raise CompactionCancelledError("Compaction cancelled") from None
            failure = CompactionError(error_message or message)
            failure.reason = message  # what Pi's compact() throws (its own errorMessage adds the prefix)
            raise failure from None
        finally:
            self._end("_manual", run)

    async def _emit_failed(self, reason: str, error_message: str | None, aborted: bool, will_retry: bool,
                           from_extension: bool) -> None:
        event: dict[str, Any] = {"type": "session_compact_failed", "reason": reason}
        if error_message is not None:
            event["errorMessage"] = error_message
        event.update({"aborted": aborted, "willRetry": will_retry, "fromExtension": from_extension})
        await self._emit_extension(event)

    # -- automatic -------------------------------------------------------------------------------

    def _latest_compaction_ms(self) -> int | None:
        """``new Date(latestCompaction.timestamp).getTime()`` on the branch (``None``: no compaction,
        or a timestamp JavaScript reads as NaN — either way nothing is older than it)."""
        latest = self._session.session_manager.latest_compaction()
        return js_date_ms(latest.get("timestamp")) if latest is not None else None

    @staticmethod
    def _older_than(message: Mapping[str, Any], compaction_ms: int | None) -> bool:
        """``message.timestamp <= new Date(compaction.timestamp).getTime()`` (a NaN compares false)."""
        if compaction_ms is None:
            return False
        timestamp = message.get("timestamp")
        return isinstance(timestamp, int | float) and not isinstance(timestamp, bool) and timestamp <= compaction_ms

    async def check(self, assistant: Mapping[str, Any], skip_aborted_check: bool = True) -> bool:
        """Pi's ``_checkCompaction``; ``True``: continue the run (the overflowed turn is retried)."""
        settings = self.settings()
        if not settings.enabled:
            return False
        if skip_aborted_check and assistant.get("stopReason") == "aborted":
            return False
        agent = self._session.agent
        model: ModelInfo | None = agent.model
        context_window = model.context_window if model is not None else 0
        same_model = model is not None and assistant.get("provider") == model.provider \
            and assistant.get("model") == model.id
        compaction_ms = self._latest_compaction_ms()
        if self._older_than(assistant, compaction_ms):
            return False
        overflow = same_model and context_overflow(assistant, context_window) is not None
        recoverable = same_model and model is not None and is_recoverable_length(assistant, model.max_tokens)
        if overflow or recoverable:
            will_retry = assistant.get("stopReason") != "stop"
            if not will_retry:
                return await self.run_auto("overflow", False)
            if self.overflow_recovery_attempted:
                message = OVERFLOW_RETRY_FAILED if overflow else LENGTH_RETRY_FAILED
                self._notify({"type": "compaction_end", "reason": "overflow", "aborted": False, "willRetry": False,
                              "errorMessage": message})
                await self._emit_failed("overflow", message, False, False, False)
                return False
            self.overflow_recovery_attempted = True
            messages = agent.messages
            if messages and messages[-1].get("role") == "assistant":
                agent.messages = list(messages[:-1])
            return await self.run_auto("overflow", will_retry)
        usage = assistant.get("usage")
        direct = calculate_context_tokens(usage) if isinstance(usage, Mapping) else 0
        if assistant.get("stopReason") == "error" or direct == 0:
            messages = agent.messages
            estimate = estimate_context_tokens(messages)
            if estimate.last_usage_index is not None:
                source = messages[estimate.last_usage_index]
                if source.get("role") == "assistant" and self._older_than(source, compaction_ms):
                    return False
            context_tokens = estimate.tokens
        else:
            context_tokens = direct
        if should_compact(context_tokens, context_window, settings):
            return await self.run_auto("threshold", False)
        return False

    async def before_next_turn(self, messages: list[Any]) -> None:
        """Pi's ``_compactBeforeNextAssistantResponse``: compact between tool rounds when the
        context crossed the threshold (the agent then continues on the compacted context)."""
        model: ModelInfo | None = self._session.agent.model
        settings = self.settings()
        if model is None or model.context_window <= 0:
            return
        if not should_compact(estimate_context_tokens(messages).tokens, model.context_window, settings):
            return
        await self.run_auto("threshold", False)

    async def run_auto(self, reason: str, will_retry: bool) -> bool:
        """Pi's ``_runAutoCompaction``; ``True``: continue the run (overflow retry)."""
        from rpcd.runtime.compaction.summarize import SummaryError

        settings = self.settings()
        run: _Run | None = None
        from_extension = False
        try:
            if self._model() is None:
                return False
            preparation, _ = self._prepare(settings)
            if preparation is None:
                return False
            self._notify({"type": "compaction_start", "reason": reason})
            run = self._begin("_auto")
            try:
                supplied = await self._extension_compaction(preparation, run, reason, will_retry, None)
            except _Cancelled:
                await self._auto_aborted(reason, False)
                return False
            from_extension = supplied is not None
            compaction = supplied if supplied is not None else await self._summarize(run, preparation, None, reason)
            if run.signal.aborted:
                await self._auto_aborted(reason, from_extension)
                return False
            entry, tokens_after = self._append(compaction, from_extension)
            await self._emit_extension({"type": "session_compact", "compactionEntry": entry,
                                        "fromExtension": from_extension, "reason": reason, "willRetry": will_retry})
            self._notify({"type": "compaction_end", "reason": reason, "result": _result(compaction, tokens_after),
                          "aborted": False, "willRetry": will_retry})
            if will_retry:
                agent = self._session.agent
                messages = agent.messages
                if messages and messages[-1].get("role") == "assistant" \
                        and messages[-1].get("stopReason") in ("error", "length"):
                    agent.messages = list(messages[:-1])
                return True
            return False
        except Exception as exc:
            if not isinstance(exc, SummaryError | CompactionError | SessionWriteError):
                _log.exception("automatic compaction failed")
            if run is not None:
                text = str(exc) or "compaction failed"
                message = (f"Context overflow recovery failed: {text}" if reason == "overflow"
                           else f"Auto-compaction failed: {text}")
                self._notify({"type": "compaction_end", "reason": reason, "aborted": False, "willRetry": False,
                              "errorMessage": message})
                await self._emit_failed(reason, message, False, False, from_extension)
            return False
        finally:
            if run is not None:
                self._end("_auto", run)

    async def _auto_aborted(self, reason: str, from_extension: bool) -> None:
        self._notify({"type": "compaction_end", "reason": reason, "aborted": True, "willRetry": False})
        await self._emit_failed(reason, None, True, False, from_extension)

    # -- tree navigation -------------------------------------------------------------------------

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool | None = None, label: str | None = None) -> dict[str, Any]:
        """Pi's ``navigateTree``: ``{cancelled, aborted?, editorText?, summaryEntry?}``."""
        from rpcd.runtime.compaction.branch import collect_entries_for_branch_summary
        from rpcd.runtime.compaction.summarize import generate_branch_summary

        session = self._session
        sm = session.session_manager
        if session.is_streaming:
            raise SessionBusyError("Wait for the current response to finish before navigating the session tree.",
                                   session_path=sm.get_session_file())
        if self.is_compacting:
            raise SessionBusyError("Wait for the compaction to finish before navigating the session tree.",
                                   session_path=sm.get_session_file())
        old_leaf = sm.get_leaf_id()
        if target_id == old_leaf:
            return {"cancelled": False}
        if summarize and self._model() is None:
            raise CompactionError("No model available for summarization")
        target = sm.get_entry(target_id)
        if target is None:
            raise InvalidEntryError(f"Entry {target_id} not found", entry_id=target_id,
                                    session_path=sm.get_session_file())
        collected = collect_entries_for_branch_summary(sm, old_leaf, target_id)
        preparation: dict[str, Any] = {"targetId": target_id, "oldLeafId": old_leaf,
                                       "commonAncestorId": collected.common_ancestor_id,
                                       "entriesToSummarize": collected.entries, "userWantsSummary": summarize}
        for key, value in (("customInstructions", custom_instructions), ("replaceInstructions", replace_instructions),
                           ("label", label)):
            if value is not None:
                preparation[key] = value
        run = self._begin("_branch")
        try:
            supplied: Mapping[str, Any] | None = None
            runner = self._runner()
            if runner is not None and runner.has_handlers("session_before_tree"):
                result = await runner.emit({"type": "session_before_tree", "preparation": preparation,
                                            "signal": run.signal})
                if _field(result, "cancel"):
                    return {"cancelled": True}
                summary = _field(result, "summary")
                if summary and summarize:
                    supplied = _extension_summary(summary)
                overrides = {key: _field(result, key) for key in ("customInstructions", "replaceInstructions",
                                                                   "label")}
                if isinstance(overrides["customInstructions"], str):
                    custom_instructions = overrides["customInstructions"]
                if isinstance(overrides["replaceInstructions"], bool):
                    replace_instructions = overrides["replaceInstructions"]
                if isinstance(overrides["label"], str):
                    label = overrides["label"]
            text: str | None = None
            details: Any = None
            usage: Any = None
            if summarize and collected.entries and supplied is None:
                found = self._model()
                if found is None:
                    raise CompactionError("No model available for summarization")
                provider, model = found
                session.refuse_over_limit("the branch summary")
                summarizer = self._summarizer(run, provider, model, {"source": "branchSummary"}, "off")
                outcome = await generate_branch_summary(
                    collected.entries, summarizer, reserve_tokens=branch_summary_reserve_tokens(session.settings()),
                    custom_instructions=custom_instructions, replace_instructions=replace_instructions)
                if outcome.get("aborted") or run.signal.aborted:
                    return {"cancelled": True, "aborted": True}
                if "error" in outcome:
                    raise CompactionError(str(outcome["error"]))
                text, usage = outcome["summary"], outcome.get("usage")
                details = {"readFiles": outcome.get("readFiles") or [], "modifiedFiles": outcome.get("modifiedFiles")
                           or []}
            elif supplied is not None:
                text, details, usage = supplied.get("summary"), supplied.get("details"), supplied.get("usage")
            if run.signal.aborted:
                return {"cancelled": True, "aborted": True}
            return await self._move(target, target_id, old_leaf, text, details, usage, supplied is not None, label)
        finally:
            self._end("_branch", run)

    async def _move(self, target: Mapping[str, Any], target_id: str, old_leaf: str | None, text: str | None,
                    details: Any, usage: Any, from_extension: bool, label: str | None) -> dict[str, Any]:
        """Move the leaf (and write the summary and label entries) — then tell the extensions."""
        sm = self._session.session_manager
        editor_text: str | None = None
        new_leaf: str | None
        kind = target.get("type")
        message = target.get("message")
        if kind == E.MESSAGE and isinstance(message, Mapping) and message.get("role") == "user":
            new_leaf = _parent(target)
            editor_text = content_text(message.get("content"), "")
        elif kind == E.CUSTOM_MESSAGE:
            new_leaf = _parent(target)
            editor_text = content_text(target.get("content"), "")
        else:
            new_leaf = target_id
        summary_entry: dict[str, Any] | None = None
        appended: list[str] = []
        if text:
            summary_id = sm.branch_with_summary(new_leaf, text, details, from_extension, usage)
            appended.append(summary_id)
            summary_entry = sm.get_entry(summary_id)
            if label:
                appended.append(sm.append_label_change(summary_id, label))
        elif new_leaf is None:
            sm.reset_leaf()
        else:
            sm.branch(new_leaf)
        if label and not text:
            appended.append(sm.append_label_change(target_id, label))
        self._session.agent.messages = list(sm.build_session_context().messages)
        for entry_id in appended:
            entry = sm.get_entry(entry_id)
            if entry is not None:
                self._notify({"type": "entry_appended", "entry": entry})
        tree_event: dict[str, Any] = {"type": "session_tree", "newLeafId": sm.get_leaf_id(), "oldLeafId": old_leaf}
        if summary_entry is not None:
            tree_event["summaryEntry"] = summary_entry
            tree_event["fromExtension"] = from_extension
        await self._emit_extension(tree_event)
        out: dict[str, Any] = {"cancelled": False}
        if editor_text is not None:
            out["editorText"] = editor_text
        if summary_entry is not None:
            out["summaryEntry"] = summary_entry
        return out


def _parent(entry: Mapping[str, Any]) -> str | None:
    parent = entry.get("parentId")
    return parent if isinstance(parent, str) and parent else None


def _field(result: Any, name: str) -> Any:
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _extension_summary(summary: Any) -> Mapping[str, Any]:
    try:
        plain = to_json(dict(summary)) if isinstance(summary, Mapping) else None
    except JsonValueError as exc:
        raise CompactionError(f"session_before_tree returned a summary that is not JSON: {exc.reason} at "
                              f"{exc.path}") from None
    if not isinstance(plain, dict) or not isinstance(plain.get("summary"), str):
        raise CompactionError("session_before_tree returned a summary without a string summary")
    return plain


def _result(compaction: Mapping[str, Any], tokens_after: int) -> dict[str, Any]:
    """Pi's ``CompactionResult`` as the ``compact`` method and ``compaction_end`` carry it."""
    result: dict[str, Any] = {"summary": compaction["summary"], "firstKeptEntryId": compaction["firstKeptEntryId"],
                              "tokensBefore": compaction["tokensBefore"], "estimatedTokensAfter": tokens_after}
    if compaction.get("usage") is not None:
        result["usage"] = compaction["usage"]
    if compaction.get("details") is not None:
        result["details"] = compaction["details"]
    return result
