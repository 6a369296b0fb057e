"""The shared redactor: credential formats, secret-named env values, JSON values."""

from __future__ import annotations

import pytest

from rpcd.core.redact import MASK, Redactor


@pytest.mark.parametrize(
    "secret",
    [
        "sk-abcdefghijklmnop1234",
        "sk-ant-api03-AbCdEfGhIjKlMnOp",
        "ghp_0123456789abcdefghijABCDEFGHIJ",
        "xoxb-1234567890-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ],
)
def test_known_credential_formats_are_masked(secret: str) -> None:
    text = Redactor(env={}).redact(f"failed with key {secret} at step 3")
    assert secret not in text and MASK in text and text.startswith("failed with key")


def test_bearer_headers_are_masked() -> None:
    assert Redactor(env={}).redact("Authorization: Bearer abc.def-ghi_123") == f"Authorization: {MASK}"


@pytest.mark.parametrize("text", ['password="hunter2hunter2"', "api_key=abcd1234efgh", "{'token': 'tok_live_9876'}"])
def test_secret_assignments_are_masked(text: str) -> None:
    redacted = Redactor(env={}).redact(text)
    assert MASK in redacted
    assert not any(v in redacted for v in ("hunter2hunter2", "abcd1234efgh", "tok_live_9876"))


def test_values_of_secret_named_env_vars_are_masked_in_any_format() -> None:
    env = {
        "MY_PROVIDER_API_KEY": "plainvalue-xyz",
        "HOME": "/home/someone",
        "GITHUB_TOKEN": "abc",
        "DB_PASSWORD": "p4ssw0rd!",
    }
    redactor = Redactor(env=env)
    text = redactor.redact("key plainvalue-xyz in /home/someone with p4ssw0rd! and abc")
    assert "plainvalue-xyz" not in text and "p4ssw0rd!" not in text
    assert "/home/someone" in text  # not a secret-looking name
    assert text.endswith("and abc")  # too short to be worth masking


def test_json_values_are_redacted_recursively_and_keys_kept() -> None:
    redactor = Redactor(env={"X_SECRET": "s3cr3t-value"})
    value = {"errors": [{"message": "s3cr3t-value leaked", "code": 5}], "ok": True}
    assert redactor.redact_value(value) == {"errors": [{"message": f"{MASK} leaked", "code": 5}], "ok": True}


def test_ordinary_text_is_untouched() -> None:
    text = "Session file not found: /home/u/.pi/agent/sessions/--x--/2025_abc.jsonl (entry 3f2a)"
    assert Redactor(env={}).redact(text) == text


def test_an_exception_text_reaches_the_log_only_at_debug_level() -> None:
    import io
    import json
    import logging

    from rpcd.daemon.logs import configure_logging

    def logged(level: str) -> dict[str, object]:
        stream = io.StringIO()
        configure_logging(level, stream)
        said = "the user's private " + "transcript line"  # not in the source line the trace shows
        try:
            raise ValueError(said)
        except ValueError:
            logging.getLogger("rpcd.test").exception("unexpected failure")
        return dict(json.loads(stream.getvalue().splitlines()[-1]))

    try:
        quiet = logged("info")
        assert quiet["excType"] == "ValueError" and "private transcript" not in json.dumps(quiet)
        assert "in logged" in str(quiet["trace"])  # the frames still say where it failed
        loud = logged("debug")
        assert "private transcript" in str(loud["exc"])
    finally:
        configure_logging("info")
