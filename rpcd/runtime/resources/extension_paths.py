"""Where extensions are found, and which runner hosts each: Pi 0.85.0's rules for TypeScript and
JavaScript (``core/package-manager.js``: ``collectAutoExtensionEntries``, ``resolveExtensionEntries``)
beside rpcd's for Python.

In a directory of extensions, in name order (byte order, as Node's ``readdirSync``), dot entries and
``node_modules`` skipped and ``.gitignore`` / ``.ignore`` / ``.fdignore`` rules honoured:

* ``*.ts`` / ``*.js`` files (Pi's), ``*.py`` files (rpcd's; names starting with ``_`` are helpers);
* a sub-directory: the entries its ``package.json`` declares under ``pi.extensions`` (those that
  exist), else its ``index.ts``, else its ``index.js`` (Pi's), else the directory itself when it has
  ``__init__.py`` (a Python package).

A directory that itself declares entries (a ``package.json`` manifest or an ``index.ts``) is those
entries, as in Pi. :func:`extension_kind` says which runner loads a path: ``python`` (a ``.py`` file,
a package with ``__init__.py``) or ``script`` (everything else: Node's extension host).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

from rpcd.core.files import read_regular
from rpcd.runtime.resources.discovery import IgnoreRules, entry_kind, list_dir, relative_posix

__all__ = [
    "ExtensionKind",
    "discover_extensions",
    "extension_kind",
    "read_pi_manifest",
    "resolve_extension_entries",
]

_log = logging.getLogger("rpcd.runtime.extensions")

ExtensionKind: TypeAlias = Literal["python", "script"]
SCRIPT_SUFFIXES = (".ts", ".js")
"""What Pi discovers in a directory (``-e`` and settings may name any file jiti loads: ``.mjs``, ``.mts`` …)."""
MANIFEST_FIELDS = ("extensions", "skills", "prompts", "themes")


def extension_kind(path: str) -> ExtensionKind:
    """``python`` for a ``.py`` module or a package directory with ``__init__.py``, else ``script``."""
    if path.endswith(".py"):
        return "python"
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, "__init__.py")):
        return "python"
    return "script"


def read_pi_manifest(package_json: str) -> dict[str, list[str]] | None:
    """Pi's ``readPiManifest``: the ``pi`` object of a ``package.json`` (its string-list fields), or
    ``None`` when there is none (no file, not JSON, no ``pi`` object)."""
    try:
        data: Any = json.loads(read_regular(package_json).decode("utf-8").removeprefix("\ufeff"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pi"), dict):
        return None
    manifest: dict[str, list[str]] = {}
    for name in MANIFEST_FIELDS:
        entries = data["pi"].get(name)
        if isinstance(entries, list) and all(isinstance(entry, str) for entry in entries):
            manifest[name] = list(entries)
    return manifest


def _script_entries(directory: str) -> list[str] | None:
    """Pi's ``resolveExtensionEntries``: the manifest's existing entries, else ``index.ts``, else
    ``index.js``; ``None`` when the directory declares none."""
    manifest = read_pi_manifest(os.path.join(directory, "package.json"))
    if manifest and manifest.get("extensions"):
        entries = [os.path.normpath(os.path.join(directory, entry)) for entry in manifest["extensions"]]
        found = [entry for entry in entries if os.path.exists(entry)]
        if found:
            return found
    for index in ("index.ts", "index.js"):
        candidate = os.path.join(directory, index)
        if os.path.exists(candidate):
            return [candidate]
    return None


def resolve_extension_entries(directory: str) -> list[str] | None:
    """The extensions a directory declares: Pi's entries (manifest, ``index.ts``, ``index.js``), else
    the directory itself when it is a Python package; ``None`` when it declares none."""
    entries = _script_entries(directory)
    if entries is not None:
        return entries
    if os.path.isfile(os.path.join(directory, "__init__.py")):
        return [directory]
    return None


def discover_extensions(directory: str) -> list[str]:
    """The extensions of a directory (see the module doc), in load order. A directory that cannot be
    listed contributes nothing: it must not make a session's services fail."""
    if not os.path.isdir(directory):
        return []
    own = _script_entries(directory)
    if own is not None:
        return own
    try:
        os.listdir(directory)
    except OSError as exc:
        _log.warning("cannot list extension directory %s: %s", directory, exc.strerror or type(exc).__name__)
        return []
    ignore = IgnoreRules()
    ignore.add_dir(directory, directory)
    found: list[str] = []
    for entry in list_dir(directory):
        name = entry.name
        if name.startswith(".") or name == "node_modules":
            continue
        kind = entry_kind(entry)
        if kind is None:
            continue
        is_dir, is_file = kind
        relative = relative_posix(entry.path, directory)
        if ignore.ignores(relative + "/" if is_dir else relative):
            continue
        if is_file and name.endswith(SCRIPT_SUFFIXES):
            found.append(entry.path)
        elif is_file and name.endswith(".py"):
            if not name.startswith("_"):
                found.append(entry.path)
        elif is_dir and not name.startswith("_"):
            found += resolve_extension_entries(entry.path) or []
        elif is_dir:
            found += _script_entries(entry.path) or []
    return found


def expand_extension_path(path: str) -> list[str]:
    """One named path (``-e``, a settings entry) as the extensions it stands for: a file as it is, a
    directory's declared entries, else the extensions found in it."""
    if os.path.isdir(path):
        entries = resolve_extension_entries(path)
        return entries if entries is not None else discover_extensions(path)
    return [path]


def split_by_kind(paths: Sequence[str]) -> list[tuple[ExtensionKind, list[str]]]:
    """``paths`` in order, cut into runs of one kind (each run goes to its runner as one load)."""
    runs: list[tuple[ExtensionKind, list[str]]] = []
    for path in paths:
        kind = extension_kind(path)
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(path)
        else:
            runs.append((kind, [path]))
    return runs
