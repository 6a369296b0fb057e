"""Pi-compatible session JSONL store.

Reads every Pi session file (v1-v3, newer Pi's unknown entry types kept byte-for-byte),
writes what Pi 0.85.0 writes, and never overwrites a user's file. See docs/store.md.

Doors: may import ``rpcd.core`` only; nothing of the host, the runtime or the wire.
"""

from typing import TYPE_CHECKING

from rpcd.core.lazy import lazy_exports

if TYPE_CHECKING:
    from rpcd.store.context import SessionContext
    from rpcd.store.importing import import_session, import_session_file
    from rpcd.store.listing import SessionInfo
    from rpcd.store.manager import ForkResult, SessionManager, assert_session_cwd_exists
    from rpcd.store.paths import default_session_dir, encode_cwd, get_agent_dir

__getattr__, __dir__ = lazy_exports(__name__, {
    ".context": ("SessionContext",),
    ".importing": ("import_session", "import_session_file"),
    ".listing": ("SessionInfo",),
    ".manager": ("ForkResult", "SessionManager", "assert_session_cwd_exists"),
    ".paths": ("default_session_dir", "encode_cwd", "get_agent_dir"),
})

__all__ = [
    "ForkResult",
    "SessionContext",
    "SessionInfo",
    "SessionManager",
    "assert_session_cwd_exists",
    "default_session_dir",
    "encode_cwd",
    "get_agent_dir",
    "import_session",
    "import_session_file",
]
