"""The external programs the tools run: ``rg`` (PyPI's ``ripgrep`` wheel, installed beside the
interpreter; no download at run time, unlike Pi's ``ensureTool``) and the shell for ``bash``."""

from __future__ import annotations

import os
import sys
import sysconfig


def ripgrep_path() -> str | None:
    """``rg`` from this environment's scripts directory, else the first on ``PATH``."""
    import shutil

    candidates = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    for directory in candidates:
        if directory:
            path = os.path.join(directory, "rg")
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return shutil.which("rg")


def shell_config(custom_shell_path: str | None = None) -> tuple[str, list[str]]:
    """Pi's ``getShellConfig`` on Unix: the ``shellPath`` setting, else ``/bin/bash``, else ``bash``
    on ``PATH``, else ``sh``; always ``-c``."""
    import shutil

    if custom_shell_path:
        if os.path.exists(custom_shell_path):
            return custom_shell_path, ["-c"]
        raise FileNotFoundError(f"Custom shell path not found: {custom_shell_path}")
    if os.path.exists("/bin/bash"):
        return "/bin/bash", ["-c"]
    found = shutil.which("bash")
    if found:
        return found, ["-c"]
    return "sh", ["-c"]
