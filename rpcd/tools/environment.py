"""The environment of what the agent runs — the ``bash`` tool, the client's ``bash``, an extension's
``exec``: the daemon's own, without its secrets.

The daemon is started with provider keys and tokens in its environment (that is how Pi's providers
are configured), and a ``printenv`` would put them into the session file and send them to the
provider. So a command gets the daemon's environment through a policy, modelled on Codex's
``shell_environment_policy``; the setting ``shellEnvironmentPolicy`` (global, or a trusted project's):

``inherit``
    what to start from: ``"all"`` (the default), ``"core"`` (``HOME``, ``LOGNAME``, ``PATH``,
    ``SHELL``, ``USER``, ``USERNAME``, ``TMPDIR``, ``TEMP``, ``TMP``, ``LANG``, ``LANGUAGE``,
    ``LC_*``, ``TERM``, ``TZ``) or ``"none"``;
``ignoreDefaultExcludes``
    ``true`` keeps what the default excludes drop: every variable whose name contains ``KEY``,
    ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``PASSPHRASE`` or ``CREDENTIAL`` (any case),
    and the known credential variables that say so in no such word (``DATABASE_URL``,
    ``SENTRY_DSN``, ``DOCKER_AUTH_CONFIG``, …);
``allow``
    names (globs, any case) the default excludes keep: ``["GITHUB_TOKEN"]``;
``exclude``
    more names (globs) to drop: ``["AWS_*", "SSH_AUTH_SOCK"]``;
``set``
    variables to set: ``{"CI": "1"}``;
``includeOnly``
    when given, only names matching one of these globs are kept.

The steps run in Codex's order: inherit, default excludes (less ``allow``), ``exclude``, ``set``,
``includeOnly``. What the session adds afterwards (``<agentDir>/bin`` on ``PATH``, the ``PI_*``
variables of the bash tool) is not filtered.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final, Literal

import attrs

SETTING: Final = "shellEnvironmentPolicy"
Inherit = Literal["all", "core", "none"]
DEFAULT_EXCLUDES: Final = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*",
                           "*CREDENTIAL*")
KNOWN_CREDENTIALS: Final = ("DATABASE_URL", "REDIS_URL", "MONGODB_URI", "SENTRY_DSN", "DOCKER_AUTH_CONFIG",
                            "NPM_CONFIG__AUTH", "MYSQL_PWD")
"""Credential variables no default-exclude word names."""
SECRETS: Final = (*DEFAULT_EXCLUDES, *KNOWN_CREDENTIALS)
CORE_VARIABLES: Final = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG",
                         "LANGUAGE", "LC_*", "TERM", "TZ")


@lru_cache(maxsize=64)
def _pattern(globs: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{fnmatch.translate(glob)})" for glob in globs) or "(?!)", re.IGNORECASE)


def _matches(globs: tuple[str, ...], name: str) -> bool:
    """Whether ``name`` matches one of ``globs`` (shell patterns, any case)."""
    return _pattern(globs).fullmatch(name) is not None


@attrs.frozen
class EnvironmentPolicy:
    """One parsed ``shellEnvironmentPolicy`` (the default: everything but the secrets)."""

    inherit: Inherit = "all"
    ignore_default_excludes: bool = False
    allow: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    set: tuple[tuple[str, str], ...] = ()
    include_only: tuple[str, ...] | None = None

    def apply(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` as this policy lets a command see it."""
        names = [name for name in env if self.inherit == "all" or (self.inherit == "core"
                                                                    and _matches(CORE_VARIABLES, name))]
        if not self.ignore_default_excludes:
            names = [n for n in names if not _matches(SECRETS, n) or _matches(self.allow, n)]
        out = {name: env[name] for name in names if not _matches(self.exclude, name)}
        out.update(self.set)
        if self.include_only is not None:
            out = {name: value for name, value in out.items() if _matches(self.include_only, name)}
        return out


DEFAULT_POLICY: Final = EnvironmentPolicy()


def environment_policy(setting: Any) -> tuple[EnvironmentPolicy, list[str]]:
    """The policy a ``shellEnvironmentPolicy`` setting value says, and a warning per part of it that
    was ignored (a wrong type): an ignored part keeps its default, so a typo never lets secrets out."""
    if setting is None:
        return DEFAULT_POLICY, []
    if not isinstance(setting, Mapping):
        return DEFAULT_POLICY, [f'Setting "{SETTING}" ignored: not an object']
    warnings: list[str] = []

    def globs(key: str) -> tuple[str, ...] | None:
        value = setting.get(key)
        if value is None:
            return None
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(value)
        warnings.append(f'Setting "{SETTING}.{key}" ignored: not a list of name patterns')
        return None

    inherit = setting.get("inherit", "all")
    if inherit not in ("all", "core", "none"):
        warnings.append(f'Setting "{SETTING}.inherit" ignored: not one of all, core, none')
        inherit = "all"
    ignore = setting.get("ignoreDefaultExcludes", False)
    if not isinstance(ignore, bool):
        warnings.append(f'Setting "{SETTING}.ignoreDefaultExcludes" ignored: not true or false')
        ignore = False
    values = setting.get("set", {})
    if not (isinstance(values, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in values.items())):
        warnings.append(f'Setting "{SETTING}.set" ignored: not an object of strings')
        values = {}
    unknown = sorted(set(setting) - {"inherit", "ignoreDefaultExcludes", "allow", "exclude", "set", "includeOnly"})
    if unknown:
        warnings.append(f'Setting "{SETTING}": unknown key(s) {", ".join(unknown)} ignored')
    policy = EnvironmentPolicy(inherit=inherit, ignore_default_excludes=ignore, allow=globs("allow") or (),
                               exclude=globs("exclude") or (), set=tuple(values.items()),
                               include_only=globs("includeOnly"))
    return policy, warnings
