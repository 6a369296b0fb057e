"""A blocking facade over ``RpcdClient`` for scripts that do not want asyncio.

    with SyncClient.spawn(["--in-memory"]) as client:
        client.new_session()
        for event in client.iter_notifications(timeout=5): ...

The asyncio client runs on a private event loop in a daemon thread, so the daemon's
output is read continuously even while the script is busy (an unread stdout would
back-pressure the whole daemon). Every method blocks until the async call finishes and
re-raises the same exceptions (``RpcError``, ``DaemonDied``, ``RpcTimeout``...).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from rpcd.clients import types as t
from rpcd.clients.client import RpcdClient
from rpcd.clients.connection import RequestHandler
from rpcd.protocol.names import SESSION_SCOPED

T = TypeVar("T")
_END = object()


class SyncClient:
    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread, client: RpcdClient) -> None:
        self._loop = loop
        self._thread = thread
        self.client = client
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop_listening = self._run(self._listen())

    @classmethod
    def spawn(
        cls, args: Sequence[str] = (), *, handlers: Mapping[str, RequestHandler] | None = None, **kwargs: Any
    ) -> SyncClient:
        """Start the daemon (see ``RpcdClient.spawn`` for the keyword arguments) and initialize it.

        ``handlers`` run on the client's event-loop thread; plain functions are fine.
        """
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="rpcd-sync-client", daemon=True)
        thread.start()
        try:
            future = asyncio.run_coroutine_threadsafe(RpcdClient.spawn(args, handlers=handlers, **kwargs), loop)
            client = future.result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        return cls(loop, thread, client)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _listen(self) -> Callable[[], None]:
        def put(method: str, params: Any) -> None:
            self._queue.put({"method": method, "params": params})

        unsubscribe = self.client.on_notification(put)
        closed = self.client.connection.closed_event

        async def watch() -> None:
            await closed.wait()
            self._queue.put(_END)

        self._watch = asyncio.get_running_loop().create_task(watch())
        return unsubscribe

    def iter_notifications(self, timeout: float | None = None) -> Iterator[t.Notification]:
        """Yield notifications as they arrive; stop after ``timeout`` idle seconds or when the daemon ends.

        Session events of a replaced generation are skipped (see ``RpcdClient``).
        """
        while True:
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                return
            if item is _END:
                self._queue.put(_END)
                return
            params = item["params"]
            if item["method"] in SESSION_SCOPED and isinstance(params, dict):
                generation = params.get("generation")
                if isinstance(generation, int) and generation < self.client.generation:
                    continue
            yield item

    def call(self, method: str, params: Any = None, **kwargs: Any) -> Any:
        return self._run(self.client.call(method, params, **kwargs))

    @property
    def server(self) -> t.InitializeResult | None:
        return self.client.server

    def new_session(self, **kwargs: Any) -> t.ReplacementResult:
        return self._run(self.client.new_session(**kwargs))

    def resume(self, session_path: str, **kwargs: Any) -> t.ReplacementResult:
        return self._run(self.client.resume(session_path, **kwargs))

    def fork(self, entry_id: str, **kwargs: Any) -> t.ForkResult:
        return self._run(self.client.fork(entry_id, **kwargs))

    def clone(self, entry_id: str | None = None, **kwargs: Any) -> t.ReplacementResult:
        return self._run(self.client.clone(entry_id, **kwargs))

    def import_jsonl(self, path: str, **kwargs: Any) -> t.ReplacementResult:
        return self._run(self.client.import_jsonl(path, **kwargs))

    def dispose(self, **kwargs: Any) -> None:
        self._run(self.client.dispose(**kwargs))

    def get_state(self, **kwargs: Any) -> t.SessionState:
        return self._run(self.client.get_state(**kwargs))

    def get_messages(self, **kwargs: Any) -> t.MessagesResult:
        return self._run(self.client.get_messages(**kwargs))

    def get_tree(self, **kwargs: Any) -> t.TreeResult:
        return self._run(self.client.get_tree(**kwargs))

    def list_sessions(self, **kwargs: Any) -> t.ListSessionsResult:
        return self._run(self.client.list_sessions(**kwargs))

    def delete_session(self, session_file: str, **kwargs: Any) -> t.DeleteSessionResult:
        return self._run(self.client.delete_session(session_file, **kwargs))

    def rename_session(self, session_file: str, name: str, **kwargs: Any) -> t.RenameSessionResult:
        return self._run(self.client.rename_session(session_file, name, **kwargs))

    def export_html(self, output_path: str | None = None, **kwargs: Any) -> t.ExportResult:
        return self._run(self.client.export_html(output_path, **kwargs))

    def export_jsonl(self, output_path: str, **kwargs: Any) -> t.ExportResult:
        return self._run(self.client.export_jsonl(output_path, **kwargs))

    def prompt(self, text: str, **kwargs: Any) -> t.PromptResult:
        return self._run(self.client.prompt(text, **kwargs))

    def abort(self, **kwargs: Any) -> None:
        self._run(self.client.abort(**kwargs))

    def set_session_name(self, name: str, **kwargs: Any) -> None:
        self._run(self.client.set_session_name(name, **kwargs))

    def get_commands(self, **kwargs: Any) -> t.CommandsResult:
        return self._run(self.client.get_commands(**kwargs))

    def set_model(self, provider: str, model_id: str, **kwargs: Any) -> t.ModelRef:
        return self._run(self.client.set_model(provider, model_id, **kwargs))

    def steer(self, text: str, **kwargs: Any) -> None:
        self._run(self.client.steer(text, **kwargs))

    def follow_up(self, text: str, **kwargs: Any) -> None:
        self._run(self.client.follow_up(text, **kwargs))

    def set_steering_mode(self, mode: Any, **kwargs: Any) -> None:
        self._run(self.client.set_steering_mode(mode, **kwargs))

    def set_follow_up_mode(self, mode: Any, **kwargs: Any) -> None:
        self._run(self.client.set_follow_up_mode(mode, **kwargs))

    def clear_queue(self, **kwargs: Any) -> t.QueueContents:
        return self._run(self.client.clear_queue(**kwargs))

    def set_thinking_level(self, level: str, **kwargs: Any) -> None:
        self._run(self.client.set_thinking_level(level, **kwargs))

    def cycle_thinking_level(self, **kwargs: Any) -> t.CycleThinkingLevelResult:
        return self._run(self.client.cycle_thinking_level(**kwargs))

    def get_available_thinking_levels(self, **kwargs: Any) -> t.ThinkingLevelsResult:
        return self._run(self.client.get_available_thinking_levels(**kwargs))

    def get_session_stats(self, **kwargs: Any) -> t.SessionStats:
        return self._run(self.client.get_session_stats(**kwargs))

    def bash(self, command: str, **kwargs: Any) -> t.BashResult:
        return self._run(self.client.bash(command, **kwargs))

    def abort_bash(self, **kwargs: Any) -> None:
        self._run(self.client.abort_bash(**kwargs))

    def set_auto_retry(self, enabled: bool, **kwargs: Any) -> None:
        self._run(self.client.set_auto_retry(enabled, **kwargs))

    def abort_retry(self, **kwargs: Any) -> None:
        self._run(self.client.abort_retry(**kwargs))

    def get_last_assistant_text(self, **kwargs: Any) -> t.LastAssistantText:
        return self._run(self.client.get_last_assistant_text(**kwargs))

    def get_fork_messages(self, **kwargs: Any) -> t.ForkMessagesResult:
        return self._run(self.client.get_fork_messages(**kwargs))

    def get_entries(self, since: str | None = None, **kwargs: Any) -> t.EntriesResult:
        return self._run(self.client.get_entries(since, **kwargs))

    def get_available_models(self, **kwargs: Any) -> t.AvailableModelsResult:
        return self._run(self.client.get_available_models(**kwargs))

    def cycle_model(self, direction: str = "forward", **kwargs: Any) -> t.CycleModelResult:
        return self._run(self.client.cycle_model(direction, **kwargs))

    def compact(self, custom_instructions: str | None = None, **kwargs: Any) -> t.CompactionResult:
        return self._run(self.client.compact(custom_instructions, **kwargs))

    def set_auto_compaction(self, enabled: bool, **kwargs: Any) -> None:
        self._run(self.client.set_auto_compaction(enabled, **kwargs))

    def navigate_tree(self, target_id: str, **kwargs: Any) -> t.NavigateTreeResult:
        return self._run(self.client.navigate_tree(target_id, **kwargs))

    def set_label(self, entry_id: str, label: str | None = None, **kwargs: Any) -> None:
        self._run(self.client.set_label(entry_id, label, **kwargs))

    def close(self, grace: float = 3.0) -> int | None:
        """Shut the daemon down and stop the loop thread; returns the daemon's exit status."""
        if self._loop.is_closed():
            return None
        try:
            self._stop_listening()
            return self._run(self.client.close(grace))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
