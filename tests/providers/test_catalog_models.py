"""A catalog provider's model specs are made when first asked for: a start-up composes every provider
of the catalog but makes the specs of those with credentials only, and the lazy specs are the specs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.models_config import CatalogModels, ModelSpec

_START = textwrap.dedent("""
    import json, sys
    from rpcd.providers.remote import build_providers
    providers, _ = build_providers(sys.argv[1], env={"OPENAI_API_KEY": "sk-planted", "HOME": sys.argv[1]})
    made_at_start = sorted(p.name for p in providers if getattr(p.spec.models, "made", False))
    usable = sorted(p.name for p in providers if p.usable_models())
    made = sorted(p.name for p in providers if getattr(p.spec.models, "made", True))
    print(json.dumps({"start": made_at_start, "usable": usable, "made": made}))
""")


def test_only_providers_with_credentials_make_their_model_specs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _START, str(tmp_path)], capture_output=True, text=True, check=True,
                          timeout=60)
    result = json.loads(done.stdout)
    assert result["start"] == []  # composing 40 providers made none of their 1,336 specs
    assert "openai" in result["usable"]
    assert result["made"] == result["usable"]  # asking who is usable made only theirs


def test_lazy_specs_are_the_specs_pi_models_give() -> None:
    builtin = builtin_catalog().providers["anthropic"]
    eager = tuple(ModelSpec.from_pi(m, builtin.id) for m in builtin.models)
    lazy = CatalogModels(builtin.models, builtin.id)
    assert len(lazy) == len(eager) and bool(lazy) and not lazy.made
    assert lazy == eager and eager == lazy and lazy.made
    assert lazy[0] == eager[0] and lazy[-1] == eager[-1] and lazy[1:3] == eager[1:3]
    assert list(lazy) == list(eager) and lazy == CatalogModels(builtin.models, builtin.id)
    assert not CatalogModels((), "none") and CatalogModels((), "none") == ()
