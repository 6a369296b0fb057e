"""What ``ctx.session_manager`` and ``ctx.model_registry`` answer: the bound session's entries and
models, read-only, as plain JSON copies (Pi's ``ReadonlySessionManager`` and the credential-free part
of its ``ModelRegistry``)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from rpcd.core.codec import to_json

T = TypeVar("T")


class SessionReader(Protocol):
    """The reads ``SessionView`` forwards (``rpcd.store.SessionManager`` has them all)."""

    def get_cwd(self) -> str: ...
    def get_session_dir(self) -> str: ...
    def get_session_id(self) -> str: ...
    def get_session_file(self) -> str | None: ...
    def get_session_name(self) -> str | None: ...
    def get_leaf_id(self) -> str | None: ...
    def get_leaf_entry(self) -> dict[str, Any] | None: ...
    def get_entry(self, entry_id: str) -> dict[str, Any] | None: ...
    def get_label(self, entry_id: str) -> str | None: ...
    def get_header(self) -> dict[str, Any]: ...
    def get_entries(self) -> list[dict[str, Any]]: ...
    def get_branch(self, from_id: str | None = None) -> list[dict[str, Any]]: ...
    def build_context_entries(self) -> list[dict[str, Any]]: ...
    def get_tree(self) -> list[dict[str, Any]]: ...


SessionGetter = Callable[[], Any]
"""Returns the bound session's ``SessionActions`` (raising when the ctx is stale)."""

def _copy(value: T) -> T:
    return copy.deepcopy(value)


class SessionView:
    """Pi's ``ReadonlySessionManager`` in Python naming; every answer is a copy (changing it changes
    nothing in the session)."""

    __slots__ = ("_session",)

    def __init__(self, session: SessionGetter) -> None:
        self._session = session

    def _sm(self) -> SessionReader:
        reader: SessionReader = self._session().session_reader()
        return reader

    def get_cwd(self) -> str:
        return str(self._sm().get_cwd())

    def get_session_dir(self) -> str:
        return str(self._sm().get_session_dir())

    def get_session_id(self) -> str:
        return str(self._sm().get_session_id())

    def get_session_file(self) -> str | None:
        file: str | None = self._sm().get_session_file()
        return file

    def get_session_name(self) -> str | None:
        name: str | None = self._sm().get_session_name()
        return name

    def get_leaf_id(self) -> str | None:
        leaf: str | None = self._sm().get_leaf_id()
        return leaf

    def get_leaf_entry(self) -> dict[str, Any] | None:
        return _copy(self._sm().get_leaf_entry())

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        return _copy(self._sm().get_entry(entry_id))

    def get_label(self, entry_id: str) -> str | None:
        label: str | None = self._sm().get_label(entry_id)
        return label

    def get_header(self) -> dict[str, Any]:
        return _copy(self._sm().get_header())

    def get_entries(self) -> list[dict[str, Any]]:
        return _copy(self._sm().get_entries())

    def get_branch(self, from_id: str | None = None) -> list[dict[str, Any]]:
        return _copy(self._sm().get_branch(from_id))

    def build_context_entries(self) -> list[dict[str, Any]]:
        """The entries the model's context is built from: the branch, a compaction replacing what it
        summarised (Pi's ``buildContextEntries``)."""
        return _copy(self._sm().build_context_entries())

    def get_tree(self) -> list[dict[str, Any]]:
        return _copy(self._sm().get_tree())

    def snapshot(self) -> dict[str, Any]:
        """Everything above as one JSON object (header, entries, leaf id, labels): what a bridge needs
        to answer these reads without asking back."""
        sm = self._sm()
        return {"header": _copy(sm.get_header()), "entries": _copy(sm.get_entries()), "leafId": sm.get_leaf_id(),
                "sessionFile": sm.get_session_file(), "sessionDir": sm.get_session_dir(), "cwd": sm.get_cwd()}


class ModelRegistryView:
    """Pi's ``ctx.modelRegistry`` (the parts that do not hand out credentials): models as Pi's
    ``Model`` JSON."""

    __slots__ = ("_session",)

    def __init__(self, session: SessionGetter) -> None:
        self._session = session

    def get_all(self) -> list[dict[str, Any]]:
        models: list[dict[str, Any]] = self._session().models_json(False)
        return models

    def get_available(self) -> list[dict[str, Any]]:
        models: list[dict[str, Any]] = self._session().models_json(True)
        return models

    def find(self, provider: str, model_id: str) -> dict[str, Any] | None:
        return next((m for m in self.get_all() if m.get("provider") == provider and m.get("id") == model_id), None)




class SessionWriter(SessionView):
    """What ``ctx.new_session(setup=...)`` gets: the new session's entries, and Pi's
    ``SessionManager`` appends (values brought into JSON first), before the session is bound."""

    __slots__ = ()

    def _writer(self) -> Any:
        return self._session()

    def _sm(self) -> SessionReader:
        reader: SessionReader = self._session()
        return reader

    def append_message(self, message: Mapping[str, Any]) -> str:
        value = to_json(dict(message))
        if value.get("role") not in ("user", "assistant", "toolResult", "bashExecution"):
            raise ValueError("append_message: role must be user, assistant, toolResult or bashExecution")
        entry_id: str = self._writer().append_message(value)
        return entry_id

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        entry_id: str = self._writer().append_custom_entry(_string(custom_type, "custom_type"), to_json(data))
        return entry_id

    def append_custom_message_entry(self, custom_type: str, content: Any, display: bool = True,
                                    details: Any = None) -> str:
        entry_id: str = self._writer().append_custom_message_entry(
            _string(custom_type, "custom_type"), to_json(content), display is True, to_json(details))
        return entry_id

    def append_label_change(self, entry_id: str, label: str | None = None) -> str:
        label_id: str = self._writer().append_label_change(_string(entry_id, "entry_id"),
                                                          None if label is None else _string(label, "label"))
        return label_id

    def append_session_info(self, name: str) -> str:
        entry_id: str = self._writer().append_session_info(_string(name, "name"))
        return entry_id


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string")
    return str.__str__(value)
