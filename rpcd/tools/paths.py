"""Pi's path rules for tool arguments (``path-utils.js`` over ``utils/paths.js``).

A path from the model is normalized before use: Unicode spaces become spaces, one leading
``@`` is dropped (models copy ``@file`` mentions), ``~`` and ``~/`` expand to ``$HOME``, a
``file://`` URL becomes its path; a relative path is resolved against the *tool's* cwd (the
session's, never the daemon's). ``resolve_read_path`` also tries the macOS screenshot-name
variants Pi tries (narrow no-break space before AM/PM, NFD, curly apostrophe).
"""

from __future__ import annotations

import os
import re
import unicodedata
from urllib.parse import unquote, urlparse

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_AM_PM = re.compile(r" (AM|PM)\.", re.IGNORECASE)
NARROW_NO_BREAK_SPACE = "\u202f"


def home_dir() -> str:
    """Node's ``os.homedir()``: ``$HOME`` when set, else the password database."""
    return os.environ.get("HOME") or os.path.expanduser("~")


def node_resolve(*segments: str) -> str:
    """Node's ``path.posix.resolve``: join from the right until absolute, then normalize
    (``..`` and ``.`` folded, duplicate and trailing slashes dropped, ``//x`` is ``/x``)."""
    joined = ""
    for segment in reversed(segments):
        if not segment:
            continue
        joined = f"{segment}/{joined}" if joined else segment
        if segment.startswith("/"):
            break
    if not joined.startswith("/"):
        joined = f"{os.getcwd()}/{joined}" if joined else os.getcwd()
    parts: list[str] = []
    for part in joined.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def expand_path(file_path: str) -> str:
    """``expandPath``: the normalizations above, without resolving against a cwd."""
    normalized = _UNICODE_SPACES.sub(" ", file_path)
    if normalized.startswith("@"):
        normalized = normalized[1:]
    if normalized == "~":
        return home_dir()
    if normalized.startswith("~/"):
        return os.path.join(home_dir(), normalized[2:])
    if normalized.startswith("file://"):
        return _file_url_to_path(normalized)
    return normalized


def _file_url_to_path(url: str) -> str:
    parsed = urlparse(url)
    if parsed.netloc not in ("", "localhost"):
        raise ValueError("File URL host must be \"localhost\" or empty on linux")
    return unquote(parsed.path)


def resolve_to_cwd(file_path: str, cwd: str) -> str:
    """``resolveToCwd``: the absolute path ``file_path`` names for a tool bound to ``cwd``."""
    normalized = expand_path(file_path)
    if normalized.startswith("/"):
        return node_resolve(normalized)
    return node_resolve(cwd, normalized)


def _exists(path: str) -> bool:
    try:
        return os.access(path, os.F_OK)
    except (OSError, ValueError):
        return False


def resolve_read_path(file_path: str, cwd: str) -> str:
    """``resolveReadPath``: ``resolve_to_cwd``, or the first macOS name variant that exists."""
    resolved = resolve_to_cwd(file_path, cwd)
    if _exists(resolved):
        return resolved
    am_pm = _AM_PM.sub(lambda m: f"{NARROW_NO_BREAK_SPACE}{m.group(1)}.", resolved)
    if am_pm != resolved and _exists(am_pm):
        return am_pm
    nfd = unicodedata.normalize("NFD", resolved)
    if nfd != resolved and _exists(nfd):
        return nfd
    curly = resolved.replace("'", "\u2019")
    if curly != resolved and _exists(curly):
        return curly
    nfd_curly = nfd.replace("'", "\u2019")
    if nfd_curly != resolved and _exists(nfd_curly):
        return nfd_curly
    return resolved
