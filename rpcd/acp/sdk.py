"""The ACP SDK's schema (``acp.schema``), imported without the pydantic work rpcd never uses: ~0.7 of the
~1.25 s the import took before ``rpcd acp`` could answer ``initialize`` on a 2-vCPU machine.

The schema defines ~300 pydantic models with ``use_attribute_docstrings=True``. On Python < 3.13 pydantic
finds each class's source by walking the stack and asking ``inspect.getmodule`` of every frame (a scan of
``sys.modules`` each time) to copy the attribute docstrings into the fields' descriptions, which only a
JSON Schema generated from the models shows; rpcd generates none. And every model's validator and
serializer are built when its class is created, though a session validates a few dozen of them.

So while the schema is imported, pydantic's docstring extraction yields nothing and its models are built
on first use (pydantic's own ``defer_build``, set for the import only). What the models accept and write
is unchanged: the ACP suites with the official SDK clients run through them. If pydantic's internals
have moved, the schema is imported as it is.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["load_schema"]

_UNSET: Any = object()


def load_schema() -> None:
    """Import ``acp.schema`` (once per process; a no-op when something imported it already)."""
    if "acp.schema" in sys.modules:
        return
    with _models_built_on_use():
        import acp.schema  # noqa: F401 - an import statement: ``-X importtime`` names it (import_module would not)


def _no_docstrings(cls: type[Any], use_inspect: bool = False) -> dict[str, str]:
    return {}


@contextlib.contextmanager
def _models_built_on_use() -> Iterator[None]:
    try:
        import pydantic

        fields: Any = importlib.import_module("pydantic._internal._fields")  # where pydantic's model fields look it up
        extract = fields.extract_docstrings_from_cls
        config: dict[str, Any] = pydantic.BaseModel.model_config  # type: ignore[assignment]
    except (ImportError, AttributeError):
        yield
        return
    before = config.get("defer_build", _UNSET)
    fields.extract_docstrings_from_cls = _no_docstrings
    config["defer_build"] = True
    try:
        yield
    finally:
        fields.extract_docstrings_from_cls = extract
        if before is _UNSET:
            config.pop("defer_build", None)
        else:
            config["defer_build"] = before

