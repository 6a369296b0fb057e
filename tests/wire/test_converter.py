"""The strict converter: camelCase, no coercion, every offending path, omission rules."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from rpcd.protocol import types as t
from rpcd.protocol.converter import ParamsError, structure, unstructure
from rpcd.protocol.methods import METHODS


def problems(data: Any, cls: type[Any]) -> list[tuple[str, str]]:
    with pytest.raises(ParamsError) as info:
        structure(data, cls)
    return [(p.path, p.message) for p in info.value.problems]


def test_wire_names_are_camel_case_both_ways() -> None:
    params = structure({"sessionPath": "/s.jsonl", "cwdOverride": "/w", "workDoneToken": 3}, t.ResumeParams)
    assert params == t.ResumeParams("/s.jsonl", "/w", 3)
    assert unstructure(params) == {"sessionPath": "/s.jsonl", "cwdOverride": "/w", "workDoneToken": 3}


def test_snake_case_keys_are_unknown_fields() -> None:
    assert problems({"session_path": "/s"}, t.ResumeParams) == [
        ("$.sessionPath", "required field missing"),
        ("$.session_path", "unknown field"),
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(5, "expected string, got integer"), (True, "expected string, got boolean"), (None, "expected string, got null"),
     (["a"], "expected string, got array")],
)
def test_no_coercion_to_string(value: Any, expected: str) -> None:
    assert problems({"entryId": value}, t.ForkParams) == [("$.entryId", expected)]


@pytest.mark.parametrize("value", [True, 1.0, "1", None])
def test_no_coercion_to_integer(value: Any) -> None:
    [(path, _)] = problems({"protocolVersion": value}, t.InitializeParams)
    assert path == "$.protocolVersion"


def test_every_offending_path_is_listed_not_only_the_first() -> None:
    data = {"protocolVersion": "1", "clientInfo": {"name": 1, "extra": True}, "capabilities": {"progress": 1}, "x": 0}
    assert sorted(problems(data, t.InitializeParams)) == [
        ("$.capabilities.progress", "expected object or null, got integer"),
        ("$.clientInfo.extra", "unknown field"),
        ("$.clientInfo.name", "expected string, got integer"),
        ("$.protocolVersion", "expected integer, got string"),
    ]  # "x" is not refused: initialize's params are open (LSP practice), clientInfo is not


def test_list_items_are_checked_with_their_index() -> None:
    assert problems({"title": "t", "options": ["a", 2, None]}, t.UiSelectParams) == [
        ("$.options[1]", "expected string, got integer"),
        ("$.options[2]", "expected string, got null"),
    ]


def test_a_string_is_not_a_list() -> None:
    assert problems({"title": "t", "options": "abc"}, t.UiSelectParams) == [("$.options", "expected array, got string")]


def test_params_must_be_an_object() -> None:
    assert problems([1], t.ForkParams) == [("$", "expected object, got array")]


def test_capabilities_are_open_for_forward_compatibility() -> None:
    data = {"protocolVersion": 1, "capabilities": {"progress": {}, "newThing": {"x": 1}}}
    params = structure(data, t.InitializeParams)
    assert params.capabilities == t.ClientCapabilities(progress={})


def test_null_for_an_optional_field_means_unset() -> None:
    assert structure({"entryId": None}, t.CloneParams) == t.CloneParams()


def test_unset_optional_fields_are_omitted_and_nullable_ones_kept() -> None:
    state = t.GetStateResult(session_id="s", cwd="/", leaf_id=None, thinking_level="off", is_streaming=False,
                             message_count=0, generation=1, status="ready", is_compacting=False,
                             steering_mode="one-at-a-time", follow_up_mode="one-at-a-time",
                             auto_compaction_enabled=True, auto_retry_enabled=True, pending_message_count=0)
    plain = unstructure(state)
    assert plain["leafId"] is None
    assert "sessionFile" not in plain and "model" not in plain and "name" not in plain
    assert plain["isStreaming"] is False and plain["messageCount"] == 0  # falsy values are not "unset"


def test_progress_value_union_is_chosen_by_kind() -> None:
    begin = structure({"token": "t", "value": {"kind": "begin", "title": "Importing"}}, t.ProgressParams)
    assert begin.value == t.ProgressBegin("begin", "Importing")
    assert problems({"token": "t", "value": {"kind": "middle"}}, t.ProgressParams) == [
        ("$.value.kind", "expected one of 'begin', 'report', 'end'"),
    ]


def test_request_id_union_refuses_booleans() -> None:
    assert structure({"id": "a"}, t.CancelParams).id == "a"
    assert problems({"id": False}, t.CancelParams) == [("$.id", "expected integer or string, got boolean")]


def test_literals_refuse_same_valued_other_types() -> None:
    assert problems({"decision": "always"}, t.AuthorizeProjectResult) == [
        ("$.decision", "expected one of 'trust', 'trustOnce', 'deny'"),
    ]


def test_error_messages_never_echo_the_value() -> None:
    secret = "sk-not-to-be-echoed-123456"
    for path, message in problems({"entryId": [secret], secret: 1}, t.ForkParams):
        assert secret not in message
        del path


@pytest.mark.parametrize("name", sorted(n for n, s in METHODS.items() if s.params is not None))
def test_every_params_type_refuses_unknown_keys(name: str) -> None:
    cls = METHODS[name].params
    assert cls is not None and attrs.has(cls)
    if cls is t.ClientCapabilities or cls is t.InitializeParams:
        return
    with pytest.raises(ParamsError) as info:
        structure({"definitelyNotAField": 1}, cls)
    assert ("$.definitelyNotAField", "unknown field") in [(p.path, p.message) for p in info.value.problems]


def test_initialize_ignores_unknown_top_level_fields_as_lsp_does() -> None:
    params = structure({"protocolVersion": 1, "processId": 42, "rootUri": "file:///p", "trace": "off",
                        "capabilities": {"progress": {}, "someFutureThing": {}}}, t.InitializeParams)
    assert params.protocol_version == 1 and params.capabilities is not None
    with pytest.raises(ParamsError):  # a known field keeps its type
        structure({"protocolVersion": "one", "processId": 42}, t.InitializeParams)


def test_an_optional_literal_takes_its_values_or_null_and_nothing_else() -> None:
    assert structure({"sort": "created"}, t.ListSessionsParams).sort == "created"
    assert structure({"sort": None}, t.ListSessionsParams).sort is None
    for bad in ("name", 1, True, ["updated"]):
        with pytest.raises(ParamsError) as refused:
            structure({"sort": bad}, t.ListSessionsParams)
        assert [p.path for p in refused.value.problems] == ["$.sort"]
def test_an_optional_literal_takes_its_values_or_null_and_names_the_field_otherwise() -> None:
    assert structure({"text": "a", "streamingBehavior": "followUp"}, t.PromptParams).streaming_behavior == "followUp"
    assert structure({"text": "a", "streamingBehavior": None}, t.PromptParams).streaming_behavior is None
    assert [p for p, _ in problems({"text": "a", "streamingBehavior": "later"}, t.PromptParams)] == [
        "$.streamingBehavior"]
    assert [p for p, _ in problems({"text": "a", "streamingBehavior": 1}, t.PromptParams)] == ["$.streamingBehavior"]
