"""``rpcctl doctor`` names every TypeScript/JavaScript extension and Pi package this session does not
load, with the reason, so a Pi user pointing rpcd at their agent dir is told what is missing (here:
no Node that can host them, whatever node the machine has)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clients.test_cli_exit_codes import Ctl


def test_doctor_names_each_script_extension_and_package_not_loaded(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    ctl.env["RPCD_NODE"] = str(tmp_path / "no-node")  # whatever node this machine has: none that can host them
    (ctl.agent / "extensions").mkdir()
    (ctl.agent / "extensions" / "hello.ts").write_text("export default function (pi) {}\n")
    (ctl.agent / "settings.json").write_text(json.dumps({"packages": ["npm:pi-foo"]}))
    done = ctl("--json", "doctor")
    result = json.loads(done.stdout.splitlines()[-1])
    messages = [p["message"] for p in result["problems"]]
    assert any(f'Extension "{ctl.agent / "extensions" / "hello.ts"}" was not loaded' in m for m in messages)
    assert any('Pi package "npm:pi-foo" (user settings) was not loaded' in m for m in messages)
    assert all(f"$RPCD_NODE={tmp_path / 'no-node'} is not an executable file" in m for m in messages
               if "was not loaded" in m)
    assert result["files"]["settings.json"]["valid"] is True  # the settings file itself is fine
