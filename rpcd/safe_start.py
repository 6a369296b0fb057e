"""Starting Python so that no project's code runs before trust.

``python -m rpcd`` puts the current directory first on ``sys.path``, and an editor starts its
agent in the project: a cloned repository holding ``shlex.py``, ``json/``, ``typing.py``,
``attrs/`` … would run inside the daemon before any trust question. An empty or relative
``PYTHONPATH`` entry (``PYTHONPATH=:/opt/x``, a common shell slip) does the same, and even
earlier. So every start of Python we own is one of:

* the ``rpcd`` / ``rpcctl`` console scripts (``sys.path[0]`` is their own ``bin`` directory);
* ``python -P -m rpcd …`` (:func:`python_module_command`; ``-P`` is Python 3.11's "safe path"),
  with relative ``PYTHONPATH`` entries dropped from the child's environment
  (:func:`without_relative_pythonpath`).

A hand-written ``python -m rpcd`` (an editor config) is caught as early as rpcd gets a say:
``rpcd/__init__`` calls :func:`restart_if_unsafe`, which executes the same command again with
``-P`` (and without relative ``PYTHONPATH`` entries) before anything else of rpcd or of the
standard library is imported. What it cannot stop is a directory named ``rpcd/`` in the project:
Python would import that instead of this package; only the console script or ``-P`` prevent it.

Doors: imports nothing of rpcd, and of the standard library only ``os`` and ``sys`` (both loaded
before any ``sys.path`` entry is searched): everything else could be a project's shadow of it.
"""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

SAFE_PATH_FLAG = "-P"
"""The interpreter flag that keeps the current directory (or a script's) off ``sys.path``."""


def python_module_command(python: str, module: str, args: "Sequence[str]" = ()) -> list[str]:
    """``python -P -m module args``: ``module`` run with no project directory on ``sys.path``."""
    return [python, SAFE_PATH_FLAG, "-m", module, *args]


def without_relative_pythonpath(env: "Mapping[str, str]") -> dict[str, str]:
    """``env`` with the empty and relative ``PYTHONPATH`` entries removed (Python resolves them
    against the current directory: the project). ``PYTHONPATH`` goes when nothing is left of it."""
    out = dict(env)
    raw = out.get("PYTHONPATH")
    if raw is None:
        return out
    kept = [entry for entry in raw.split(os.pathsep) if os.path.isabs(entry)]
    if kept:
        out["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        del out["PYTHONPATH"]
    return out


def _running_module() -> str | None:
    """The module given to ``python -m`` while its package is being imported, else ``None``."""
    if sys.argv[:1] != ["-m"]:  # Python sets argv[0] to "-m" while it locates the module
        return None
    index = len(sys.orig_argv) - len(sys.argv)
    if not 0 < index < len(sys.orig_argv):
        return None
    module = sys.orig_argv[index]
    return module[2:] if module.startswith("-m") and module != "-m" else module


def restart_if_unsafe() -> None:
    """Execute ``python -m rpcd…`` again with ``-P`` when it was started with the current
    directory on ``sys.path`` (or with relative ``PYTHONPATH`` entries). A checkout run from its
    own root (the directory on ``sys.path`` is the one holding this package) is left alone."""
    module = _running_module()
    if module is None or not (module == "rpcd" or module.startswith("rpcd.")) or not sys.executable:
        return
    env = dict(os.environ)
    cleaned = without_relative_pythonpath(env)
    if sys.flags.safe_path and cleaned == env:
        return
    own_root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if (cleaned == env and sys.path and sys.path[0]
            and os.path.realpath(sys.path[0]) == own_root):
        return
    os.execve(sys.executable, [sys.executable, SAFE_PATH_FLAG, *sys.orig_argv[1:]], cleaned)
