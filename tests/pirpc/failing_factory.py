"""``rpcd --mode rpc`` whose runtime factory fails from its second session on (the first replacement
fails after the old session was torn down): ``python -P -m tests.pirpc.failing_factory <rpcd args>``."""

from __future__ import annotations

import sys
from typing import Any

from rpcd.core.errors import FactoryError
from rpcd.runtime import factory as factory_module


def _patch() -> None:
    real = factory_module.make_default_factory
    built = 0

    def make(*args: Any, **kwargs: Any) -> Any:
        factory = real(*args, **kwargs)

        async def failing(**call: Any) -> Any:
            nonlocal built
            built += 1
            if built > 1:
                raise FactoryError("injected: the factory cannot build another session", cwd=call.get("cwd"))
            return await factory(**call)

        return failing

    factory_module.make_default_factory = make


if __name__ == "__main__":
    _patch()
    from rpcd.daemon.pirpc import main

    sys.exit(main(sys.argv[1:]))
