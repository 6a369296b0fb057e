"""Pi's own example extensions, TypeScript as Pi ships them, run in rpcd's Node extension host beside
real ``pi --mode rpc`` running the same file: the session files, the session events, the extension UI
requests, the extension errors and the request bodies are equal (``extension_programs.py`` normalises
both sides; the differences Pi documents are the ones the Python ports' test allows)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.node_host import node_host_env
from tests.pi_compat.extension_programs import run_both
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.test_extension_ports_against_pi import PROGRAMS, assert_same_behaviour


DEFAULT = ("api-probe", "plan-mode", "permission-gate", "session-name")
"""A few programs in the default run (the API probe covers most members; plan-mode is a directory
extension with a helper module; session-name a synchronous call that sets off handlers); every
program with ``RPCD_LONG=1``."""


def _programs() -> list[Any]:
    long_only = [pytest.mark.slow, pytest.mark.skipif(os.environ.get("RPCD_LONG") != "1",
                                                      reason="long variant: RPCD_LONG=1")]
    return [name if name in DEFAULT else pytest.param(name, marks=long_only) for name in PROGRAMS]


@pytest.fixture(scope="module")
def node_env() -> dict[str, str]:
    return node_host_env()


@pytest.mark.parametrize("name", _programs())
def test_pi_s_typescript_example_behaves_the_same_in_rpcd(pi_oracle: PiOracle, node_env: dict[str, str],
                                                            tmp_path: Path, name: str) -> None:
    pi, ours = run_both(pi_oracle, tmp_path, PROGRAMS[name], typescript=node_env)
    assert_same_behaviour(name, pi, ours)
