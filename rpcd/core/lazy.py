"""A package's public names, imported from their modules on first use (PEP 562).

A room's ``__init__`` re-exports what its modules define; importing all of them eagerly made any
``import rpcd.<room>.<module>`` pay for every module of the room (the daemon's first answer waited
for the built-in tools' implementations and the session listing while it needed neither). With
``lazy_exports`` a name is imported when it is first read (``from rpcd.tools import ApprovalGate``
imports ``rpcd.tools.approval`` only), then cached in the package. The package keeps the same
names under ``if TYPE_CHECKING:`` for type checkers and in ``__all__``; ``tests/core/test_lazy_exports.py``
checks that the three lists agree and that every name resolves.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``; ``exports`` maps a module (absolute, or
    relative to the package with a leading ``.``) to the names it provides."""
    if any(isinstance(names, str) for names in exports.values()):
        raise TypeError("lazy_exports: each module maps to a sequence of names, not one string")
    where = {
        name: module if not module.startswith(".") else package + module
        for module, names in exports.items()
        for name in names
    }
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(module)  # not importlib.import_module: ``python -X importtime`` reports this one
        value = getattr(sys.modules[module], name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
