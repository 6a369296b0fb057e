"""Which MCP servers a session uses: ``mcp.json`` files in the format ``pi-mcp-adapter`` documents,
and a front's own list (ACP's ``mcpServers``), as :class:`ServerConfig` values.

Files, in ``pi-mcp-adapter``'s precedence (later wins, merged field by field as it merges them):

1. ``~/.config/mcp/mcp.json``, ``~/.agents/mcp.json``, ``~/.agents/mcp/mcp.json`` (the user's shared files);
2. ``<agentDir>/mcp.json`` (Pi's global file);
3. ``<cwd>/.pi/mcp.json`` — only for a trusted project (``.pi/mcp.json`` is one of the entries that
   make Pi ask for trust).

A file is ``{"mcpServers": {name: entry}, "settings": {...}}`` with ``//`` and ``/* */`` comments and
trailing commas allowed. An entry has ``command``/``args``/``env``/``cwd`` (stdio) or ``url``/
``headers`` (HTTP; ``"type": "sse"`` or ``httpTransport: "sse"`` for the legacy SSE transport),
and may say ``disabled``, ``includeTools``, ``excludeTools``, ``requestTimeoutMs`` and (rpcd's own)
``startupTimeoutMs``. ``${VAR}``, ``$env:VAR`` and ``{env:VAR}`` in ``args``, ``env``, ``cwd``,
``url`` and ``headers`` read the daemon's environment. Where rpcd differs from the adapter is
written in ``docs/mcp.md``. A broken file or entry is a diagnostic, never a failure.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from rpcd.core.files import read_regular
from rpcd.core.jsonc import strip_jsonc
from rpcd.core.values import Diagnostic

Transport = Literal["stdio", "http", "sse"]
TRANSPORTS: Final[tuple[Transport, ...]] = ("stdio", "http", "sse")
CONFIG_FILE: Final = "mcp.json"
PROJECT_DIR: Final = ".pi"
FILE_LIMIT: Final = 1 << 20
DEFAULT_REQUEST_TIMEOUT: Final = 60.0
"""Seconds a call may go without an answer or a progress notification (the TypeScript SDK's default)."""
MAX_REQUEST_TIME: Final = 3600.0
"""Seconds a call may take at most, progress or not."""
DEFAULT_STARTUP_TIMEOUT: Final = 30.0
"""Seconds a server has to start and answer ``initialize`` and the first listings."""
_ENV_REF = re.compile(r"\$\{(\w+)\}|\$env:(\w+)|\{env:(\w+)\}")
_STDIO_FIELDS: Final = ("command", "args", "env", "cwd", "inheritEnv")
_HTTP_FIELDS: Final = ("url", "headers", "httpTransport", "type", "auth", "bearerToken", "bearerTokenEnv", "oauth")
_URL_BOUND: Final = ("headers", "bearerToken", "bearerTokenEnv", "oauth", "auth")


@attrs.frozen
class ServerConfig:
    """One MCP server as a session names it. Equal configs share one running server (``key``)."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    inherit_env: bool = False
    """``inheritEnv: true``: the server gets the daemon's whole environment (else the SDK's few
    safe variables — ``HOME``, ``PATH``, ``USER`` … — plus ``env``)."""
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), repr=False)
    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    source: str = ""
    """Where it was named: a file's path, or the front (``acp``)."""

    def key(self) -> tuple[Any, ...]:
        """What makes two configs the same running server (timeouts and filters are per session)."""
        return (self.name, self.transport, self.command, self.args, self.env, self.inherit_env, self.cwd,
                self.url, self.headers)

    def target(self) -> str:
        """What it runs or where it connects, for a person (no env values, headers or URL userinfo)."""
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args]).strip()
        return _strip_userinfo(self.url or "")

    def allows_tool(self, tool: str) -> bool:
        """``includeTools`` / ``excludeTools`` (names or simple ``*`` globs), as the adapter filters."""
        from fnmatch import fnmatchcase

        if self.include_tools is not None and not any(fnmatchcase(tool, p) for p in self.include_tools):
            return False
        return not any(fnmatchcase(tool, p) for p in self.exclude_tools)


@attrs.frozen
class McpConfigs:
    """The servers named for one session, and what was wrong with what named them."""

    servers: tuple[ServerConfig, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()


def config_paths(cwd: str, agent_dir: str, *, project_trusted: bool, home: str | None = None) -> list[str]:
    """The files read, lowest precedence first."""
    home = home if home is not None else os.path.expanduser("~")
    paths = [
        os.path.join(home, ".config", "mcp", CONFIG_FILE),
        os.path.join(home, ".agents", CONFIG_FILE),
        os.path.join(home, ".agents", "mcp", CONFIG_FILE),
        os.path.join(agent_dir, CONFIG_FILE),
    ]
    if project_trusted:
        paths.append(os.path.join(cwd, PROJECT_DIR, CONFIG_FILE))
    return paths


def load_file_configs(cwd: str, agent_dir: str, *, project_trusted: bool, home: str | None = None,
                      environ: Mapping[str, str] | None = None) -> McpConfigs:
    """The servers the ``mcp.json`` files name for a session in ``cwd`` (disabled ones left out)."""
    environ = os.environ if environ is None else environ
    merged: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    settings: dict[str, Any] = {}
    diagnostics: list[Diagnostic] = []
    for path in config_paths(cwd, agent_dir, project_trusted=project_trusted, home=home):
        document = _read(path, diagnostics)
        if document is None:
            continue
        servers = document.get("mcpServers", document.get("mcp-servers", {}))
        if not isinstance(servers, Mapping):
            diagnostics.append(Diagnostic("warning", f"{path}: mcpServers must be an object; ignored"))
            servers = {}
        raw_settings = document.get("settings")
        if isinstance(raw_settings, Mapping):
            settings.update(raw_settings)
        for name, entry in servers.items():
            if not isinstance(entry, Mapping):
                diagnostics.append(Diagnostic("warning", f"{path}: MCP server {name!r} must be an object; ignored"))
                continue
            merged[str(name)] = merge_entry(merged.get(str(name)), entry)
            sources[str(name)] = path
    out: list[ServerConfig] = []
    for name, entry in merged.items():
        if entry.get("disabled") is True:
            continue
        config, problem = server_from_entry(name, entry, source=sources[name], cwd=cwd, settings=settings,
                                            environ=environ)
        if problem is not None:
            diagnostics.append(Diagnostic("warning", f"{sources[name]}: MCP server {name!r} ignored: {problem}"))
        elif config is not None:
            out.append(config)
    return McpConfigs(tuple(out), tuple(diagnostics))


def merge_entry(base: Mapping[str, Any] | None, override: Mapping[str, Any]) -> dict[str, Any]:
    """``pi-mcp-adapter``'s ``mergeServerMaps`` for one name: field by field, except that an
    override that switches transport drops the other transport's fields, and one that points an HTTP
    server at another URL drops the credentials bound to the old one."""
    merged = dict(base or {})
    if base is not None:
        if isinstance(override.get("command"), str):
            for field in _HTTP_FIELDS:
                merged.pop(field, None)
        elif isinstance(override.get("url"), str):
            for field in _STDIO_FIELDS:
                merged.pop(field, None)
            if override["url"] != base.get("url"):
                for field in _URL_BOUND:
                    merged.pop(field, None)
    merged.update(override)
    return merged


def server_from_entry(name: str, entry: Mapping[str, Any], *, source: str, cwd: str | None = None,
                      settings: Mapping[str, Any] | None = None,
                      environ: Mapping[str, str] | None = None) -> tuple[ServerConfig | None, str | None]:
    """One file entry as a config, or the reason it cannot be one."""
    environ = os.environ if environ is None else environ
    settings = settings or {}
    if not name or not isinstance(name, str):
        return None, "a server needs a name"
    command, url = entry.get("command"), entry.get("url")
    if isinstance(command, str) and command and isinstance(url, str) and url:
        return None, "configure exactly one of command and url"
    timeouts = _timeouts(entry, settings)
    if isinstance(timeouts, str):
        return None, timeouts
    request_timeout, startup_timeout = timeouts
    filters = _filters(entry)
    if isinstance(filters, str):
        return None, filters
    include, exclude = filters
    if isinstance(command, str) and command:
        args = entry.get("args", [])
        env = entry.get("env", {})
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            return None, "args must be a list of strings"
        if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
            return None, "env must be an object of strings"
        if any(isinstance(v, str) and v.startswith("!") and not v.startswith("!!") for v in env.values()):
            return None, "env values that run a command (a leading '!') are not supported by rpcd"
        server_cwd = entry.get("cwd")
        if server_cwd is not None and not isinstance(server_cwd, str):
            return None, "cwd must be a string"
        resolved_cwd = os.path.expanduser(interpolate(server_cwd, environ)) if server_cwd else cwd
        if resolved_cwd is not None and cwd is not None and not os.path.isabs(resolved_cwd):
            resolved_cwd = os.path.join(cwd, resolved_cwd)
        return ServerConfig(
            name=name, transport="stdio", command=interpolate(command, environ),
            args=tuple(interpolate(a, environ) for a in args),
            env=tuple((str(k), interpolate(_unescape(v), environ)) for k, v in env.items()),
            inherit_env=entry.get("inheritEnv") is True, cwd=resolved_cwd, include_tools=include,
            exclude_tools=exclude, request_timeout=request_timeout, startup_timeout=startup_timeout, source=source,
        ), None
    if isinstance(url, str) and url:
        kind = entry.get("httpTransport", entry.get("type", "http"))
        transport: Transport = "sse" if kind == "sse" else "http"
        headers = entry.get("headers", {})
        if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
            return None, "headers must be an object of strings"
        if any(v.startswith("!") and not v.startswith("!!") for v in headers.values()):
            return None, "header values that run a command (a leading '!') are not supported by rpcd"
        resolved_headers = [(str(k), interpolate(_unescape(v), environ)) for k, v in headers.items()]
        token = _bearer(entry, environ)
        if isinstance(token, str) and token:
            resolved_headers.append(("Authorization", f"Bearer {token}"))
        missing = [m for m in _missing(url, environ)]
        if missing:
            return None, f"url names unset environment variables: {', '.join(missing)}"
        return ServerConfig(
            name=name, transport=transport, url=interpolate(url, environ), headers=tuple(resolved_headers),
            include_tools=include, exclude_tools=exclude, request_timeout=request_timeout,
            startup_timeout=startup_timeout, source=source,
        ), None
    if entry.get("socket") is not None:
        return None, "socket (rmcp-mux) servers are not supported by rpcd"
    return None, "configure command (stdio) or url (HTTP)"


def interpolate(value: str, environ: Mapping[str, str]) -> str:
    """``${VAR}``, ``$env:VAR``, ``{env:VAR}`` → the variable's value (unset: empty), as the adapter does."""
    if "$" not in value and "{env:" not in value:
        return value
    return _ENV_REF.sub(lambda m: environ.get(m.group(1) or m.group(2) or m.group(3), ""), value)


def dedupe(configs: Iterable[ServerConfig]) -> list[ServerConfig]:
    """One config per name, the last naming winning (a front's list after the files)."""
    by_name: dict[str, ServerConfig] = {}
    for config in configs:
        by_name.pop(config.name, None)
        by_name[config.name] = config
    return list(by_name.values())


def _read(path: str, diagnostics: list[Diagnostic]) -> Mapping[str, Any] | None:
    try:
        text = read_regular(path, FILE_LIMIT).decode("utf-8-sig")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
        diagnostics.append(Diagnostic("warning", f"Could not read {path}: {reason}"))
        return None
    plain = strip_jsonc(text, trailing_commas=True)
    if not plain.strip():
        return None
    try:
        document = json.loads(plain)
    except json.JSONDecodeError as exc:
        diagnostics.append(Diagnostic("warning", f"Invalid JSON in {path} at line {exc.lineno} column {exc.colno}"))
        return None
    if not isinstance(document, Mapping):
        diagnostics.append(Diagnostic("warning", f"{path}: expected an object"))
        return None
    return document


def _timeouts(entry: Mapping[str, Any], settings: Mapping[str, Any]) -> tuple[float, float] | str:
    out: list[float] = []
    for key, default in (("requestTimeoutMs", DEFAULT_REQUEST_TIMEOUT), ("startupTimeoutMs", DEFAULT_STARTUP_TIMEOUT)):
        value = entry.get(key, settings.get(key))
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0):
            out.append(default)  # the adapter: omitted or <= 0 is the default
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append(min(float(value) / 1000.0, MAX_REQUEST_TIME))
        else:
            return f"{key} must be a number of milliseconds"
    return out[0], out[1]


def _filters(entry: Mapping[str, Any]) -> tuple[tuple[str, ...] | None, tuple[str, ...]] | str:
    include, exclude = entry.get("includeTools"), entry.get("excludeTools", [])
    for key, value in (("includeTools", include), ("excludeTools", exclude)):
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            return f"{key} must be a list of strings"
    return (tuple(include) if include is not None else None), tuple(exclude or ())


def _bearer(entry: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    token = entry.get("bearerToken")
    if isinstance(token, str) and token:
        return interpolate(_unescape(token), environ)
    variable = entry.get("bearerTokenEnv")
    if isinstance(variable, str) and variable:
        return environ.get(variable)
    return None


def _unescape(value: str) -> str:
    """``!!text`` is the literal ``!text`` (the adapter's escape for its command marker)."""
    return value[1:] if value.startswith("!!") else value


def _missing(value: str, environ: Mapping[str, str]) -> Sequence[str]:
    return sorted({m.group(1) or m.group(2) or m.group(3) for m in _ENV_REF.finditer(value)
                   if (m.group(1) or m.group(2) or m.group(3)) not in environ})


def _strip_userinfo(url: str) -> str:
    start = url.find("//")
    if start == -1:
        return url
    end = len(url)
    for delimiter in "/?#":
        found = url.find(delimiter, start + 2)
        if found != -1:
            end = min(end, found)
    authority = url[start + 2:end]
    return url[:start + 2] + authority.rpartition("@")[2] + url[end:] if "@" in authority else url
