"""The checked-in OpenRPC document is current and covers the whole method table and code table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rpcd.protocol.errors import DEFAULT_MESSAGES, WHEN, ErrorCode
from rpcd.protocol.methods import METHODS
from rpcd.protocol.openrpc import DOCUMENT, render
from tests.driver import REPO as ROOT


def test_checked_in_document_is_current() -> None:
    result = subprocess.run([sys.executable, "-m", "rpcd.protocol.openrpc", "--check"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def rendered() -> str:
    """The document the method table renders, rendered once for the module (~0.7 s of CPU a rendering)."""
    return render()


def test_check_fails_on_a_stale_document(tmp_path: object, monkeypatch: object, rendered: str) -> None:
    import rpcd.protocol.openrpc as openrpc

    stale = tmp_path / "openrpc.json"  # type: ignore[operator]
    stale.write_text("{}\n")
    monkeypatch.setattr(openrpc, "DOCUMENT", stale)  # type: ignore[attr-defined]
    monkeypatch.setattr(openrpc, "render", lambda: rendered)  # type: ignore[attr-defined]
    assert openrpc.main(["--check"]) == 1
    assert openrpc.main(["--write"]) == 0
    assert openrpc.main(["--check"]) == 0


def test_document_names_every_method_and_every_error_code(rendered: str) -> None:
    document = json.loads(rendered)
    assert [m["name"] for m in document["methods"]] == list(METHODS)
    assert {e["code"] for e in document["components"]["errors"].values()} == {int(c) for c in ErrorCode}
    assert -32002 not in {int(c) for c in ErrorCode}
    assert DOCUMENT.read_text() == rendered


def test_every_error_code_is_documented() -> None:
    assert set(WHEN) == set(ErrorCode) == set(DEFAULT_MESSAGES)
    assert all(len(text) > 10 for text in WHEN.values())


def test_two_classes_of_one_name_fail_the_generator() -> None:
    """The generator used to keep the first class of a name and publish it for both (the closed
    ``CompactionResult`` of the results stood for the session event's): now it refuses."""
    import attrs
    import pytest

    from rpcd.protocol.openrpc import NameClash, _Schemas

    def first() -> type[object]:
        @attrs.frozen
        class Twin:
            value: int

        return Twin

    def second() -> type[object]:
        @attrs.frozen
        class Twin:
            value: str

        return Twin

    schemas = _Schemas()
    one, other = first(), second()
    schemas.of(one)
    schemas.of(one)  # the same class again is fine
    with pytest.raises(NameClash, match="two classes are named Twin"):
        schemas.of(other)
