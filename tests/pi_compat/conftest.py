"""The real Pi 0.85.0 for this folder's tests: installed once per machine, one Node process per run.

If the npm registry cannot be reached the tests skip and say why; ``RPCD_REQUIRE_PI_ORACLE=1``
turns that skip into a failure (CI on a machine that must have the oracle).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pi_compat.oracle import OracleUnavailable, PiOracle, PiReader, ensure_oracle


@pytest.fixture(scope="session")
def pi_oracle() -> PiOracle:
    try:
        return ensure_oracle()
    except OracleUnavailable as exc:
        message = f"real Pi 0.85.0 oracle unavailable: {exc}"
        if os.environ.get("RPCD_REQUIRE_PI_ORACLE") == "1":
            pytest.fail(f"{message} (RPCD_REQUIRE_PI_ORACLE=1)")
        pytest.skip(message)


@pytest.fixture(scope="session")
def pi_reader(pi_oracle: PiOracle) -> Iterator[PiReader]:
    with pi_oracle.start_reader() as reader:
        yield reader


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated agent dir (``PI_CODING_AGENT_DIR``) so nothing here touches ``~/.pi``."""
    directory = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(directory))
    return directory
