"""``scripts/usable_models.py`` (the count docs/providers.md quotes) against a real daemon: with a
credential for every provider, every catalog model is usable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "usable_models.py"


def test_every_catalog_model_is_usable_with_every_credential() -> None:
    done = subprocess.run([sys.executable, "-P", str(SCRIPT), "--json"], capture_output=True, text=True,
                          timeout=120, check=True)
    summary = json.loads(done.stdout)
    assert summary == {"catalog": 1336, "usable": 1336, "unusable": 0, "unusableByProvider": {},
                       "unusableByApi": {}}
