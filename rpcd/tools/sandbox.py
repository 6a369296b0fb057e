"""A sandbox for what the agent runs: approval decides *whether* a command runs, the sandbox what it
can touch — the ``bash`` tool, the client's ``bash`` and an extension's ``exec``.

Modes (``--sandbox``, the ``sandbox`` setting, ``setSandbox``, ACP's ``sandbox`` config option):

``off``
    as Pi: the command runs with the daemon's rights (the default);
``read-only``
    the whole file system is read-only; the temp dir is a private, empty one (bubblewrap) that is
    gone with the command;
``workspace-write``
    the session's project directory, the temp dir and the ``writableRoots`` of the setting are
    writable, everything else read-only.

The network is off under either mode unless allowed (``--sandbox-network on``, ``"network": true``).

Two mechanisms, the first that works here is used (``RPCD_SANDBOX_MECHANISMS`` orders them,
default ``bwrap,landlock``):

* **bubblewrap** (``bwrap``, the Debian package ``bubblewrap``): the command runs in new mount, PID,
  IPC, UTS, cgroup and user namespaces, ``/`` bound read-only with the writable roots bound over it,
  a fresh ``/dev`` and ``/proc``, and — without network — its own network namespace with only a
  loopback (nothing outside is reachable, by any protocol). It dies with the daemon.
* **Landlock** (Linux ≥ 5.13; probed through ``landlock_create_ruleset``): the command is started by
  a tiny helper (``python -P -S -c …``, the standard library only) that restricts itself — writes
  only beneath the writable roots and to ``/dev``; with ABI ≥ 4, no TCP ``connect``/``bind`` (other
  protocols, such as UDP, are not covered by Landlock); with ABI ≥ 6, no signals to processes
  outside and no abstract Unix sockets — and then executes the shell. A process under Landlock
  cannot ``ptrace`` one outside it.

Neither available (or a policy the one available cannot enforce, e.g. no network under Landlock
< 4): every sandboxed command is refused with the reason, nothing runs, and the state says so
(``getState.sandbox.problem``). The sandbox is not a promise about what the daemon itself does
(extensions run in-process).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from rpcd.core.values import SANDBOX_MODES, Diagnostic, SandboxMode, SandboxState
from rpcd.core.values import SandboxMechanism as Mechanism

SETTING: Final = "sandbox"
MECHANISMS_ENV: Final = "RPCD_SANDBOX_MECHANISMS"


class SandboxUnavailableError(Exception):
    """The policy asks for a sandbox this machine cannot give; the command was not run."""


@attrs.frozen
class SandboxPolicy:
    """What a sandboxed command may do."""

    mode: SandboxMode = "off"
    network: bool = False
    """Whether it may reach the network (only asked when ``mode`` is not ``off``)."""
    writable_roots: tuple[str, ...] = ()
    """More writable directories under ``workspace-write`` (absolute)."""

    @property
    def active(self) -> bool:
        return self.mode != "off"


OFF: Final = SandboxPolicy()


def parse_mode(value: Any) -> SandboxMode | None:
    return next((mode for mode in SANDBOX_MODES if mode == value), None)


def policy_from_setting(setting: Any) -> tuple[SandboxPolicy, list[str]]:
    """The ``sandbox`` setting — ``"workspace-write"`` or ``{"mode", "network"?, "writableRoots"?}`` —
    and a warning per part that was ignored (a wrong type, an unknown mode, a relative root)."""
    if setting is None:
        return OFF, []
    if isinstance(setting, str):
        setting = {"mode": setting}
    if not isinstance(setting, Mapping):
        return OFF, [f'Setting "{SETTING}" ignored: not a mode or an object']
    warnings: list[str] = []
    mode = parse_mode(setting.get("mode", "off"))
    if mode is None:
        warnings.append(f'Setting "{SETTING}.mode" ignored: not one of {", ".join(SANDBOX_MODES)}')
        mode = "off"
    network = setting.get("network", False)
    if not isinstance(network, bool):
        warnings.append(f'Setting "{SETTING}.network" ignored: not true or false')
        network = False
    roots = setting.get("writableRoots", [])
    if not (isinstance(roots, list) and all(isinstance(r, str) and os.path.isabs(r) for r in roots)):
        warnings.append(f'Setting "{SETTING}.writableRoots" ignored: not a list of absolute paths')
        roots = []
    return SandboxPolicy(mode, network, tuple(roots)), warnings


_STRICTNESS: Final[Mapping[SandboxMode, int]] = {"off": 0, "workspace-write": 1, "read-only": 2}


def configured_policy(global_setting: Any, project_setting: Any = None) -> tuple[SandboxPolicy, list[str]]:
    """The sandbox the settings ask for: the global ``sandbox`` setting, which a (trusted) project's
    may only *tighten* — a stricter mode, the network off — never loosen, and it adds no writable
    roots: a command in the sandbox can write the project, and so its ``.pi/settings.json``. The
    warnings of both."""
    base, warnings = policy_from_setting(global_setting)
    if project_setting is None:
        return base, warnings
    project, more = policy_from_setting(project_setting)
    raw = {"mode": project_setting} if isinstance(project_setting, str) else project_setting
    mode = project.mode if _STRICTNESS[project.mode] > _STRICTNESS[base.mode] else base.mode
    said_network = isinstance(raw, Mapping) and isinstance(raw.get("network"), bool)
    network = base.network and (project.network if said_network else True)
    return SandboxPolicy(mode, network, base.writable_roots), [*warnings, *more]


class SandboxControl:
    """The sandbox in force for the sessions that share this control (the JSON-RPC daemon: one per
    process; ``rpcd acp``: one per session, like its approval mode). What was set (``--sandbox`` /
    ``--sandbox-network``, ``setSandbox``, ACP's options) beats the settings (``configured_policy``),
    part by part; the settings' ``writableRoots`` and the front's ``extra_roots`` always count."""

    def __init__(self, mode: SandboxMode | None = None, network: bool | None = None,
                 extra_roots: tuple[str, ...] = ()) -> None:
        self.mode = mode
        self.network = network
        self.extra_roots = extra_roots
        """More writable directories the front gave (ACP's ``additionalDirectories``), beside the settings'."""

    def set(self, mode: SandboxMode | None = None, network: bool | None = None) -> None:
        """Set the mode and/or the network (``None``: that part stays as it is)."""
        if mode is not None:
            self.mode = mode
        if network is not None:
            self.network = network

    def effective(self, configured: SandboxPolicy = OFF) -> SandboxPolicy:
        """The sandbox of the next command, given what the settings ask for."""
        return SandboxPolicy(self.mode if self.mode is not None else configured.mode,
                             self.network if self.network is not None else configured.network,
                             (*configured.writable_roots, *self.extra_roots))


# -- what this machine offers -------------------------------------------------------------------------


@attrs.frozen
class Support:
    """The mechanisms that work here: ``bwrap`` (its path) and the Landlock ABI (0: none), and why not."""

    bwrap: str | None
    landlock_abi: int
    reasons: tuple[str, ...] = ()


def _landlock_abi() -> tuple[int, str | None]:
    if not sys.platform.startswith("linux"):
        return 0, "Landlock is Linux only"
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError) as exc:
        return 0, f"Landlock could not be probed ({type(exc).__name__})"
    if abi < 0:
        err = ctypes.get_errno()
        return 0, f"Landlock is not available ({os.strerror(err)}: the kernel lacks it or has it disabled)"
    return int(abi), None


def _bwrap() -> tuple[str | None, str | None]:
    import shutil

    path = shutil.which("bwrap")
    if path is None:
        return None, "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        done = subprocess.run([path, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--", "true"],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bubblewrap does not start ({type(exc).__name__})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"bubblewrap cannot make a sandbox here ({said[-1] if said else f'exit {done.returncode}'})"
    return path, None


@functools.cache
def support() -> Support:
    """Probed once per process (bubblewrap: one ``bwrap … true``, a few milliseconds)."""
    wanted = [m.strip() for m in os.environ.get(MECHANISMS_ENV, "bwrap,landlock").split(",") if m.strip()]
    reasons: list[str] = []
    bwrap = None
    if "bwrap" in wanted:
        bwrap, why = _bwrap()
        if why:
            reasons.append(why)
    abi = 0
    if "landlock" in wanted:
        abi, why = _landlock_abi()
        if why:
            reasons.append(why)
    return Support(bwrap if "bwrap" in wanted else None, abi, tuple(reasons))


def mechanism_for(policy: SandboxPolicy) -> tuple[Mechanism | None, str | None]:
    """Which mechanism enforces ``policy`` here, or why none does."""
    found = support()
    order = [m.strip() for m in os.environ.get(MECHANISMS_ENV, "bwrap,landlock").split(",")]
    for name in order:
        if name == "bwrap" and found.bwrap is not None:
            return "bwrap", None
        if name == "landlock" and found.landlock_abi >= 1:
            if not policy.network and found.landlock_abi < 4:
                return None, (f"Landlock ABI {found.landlock_abi} cannot keep a command off the network "
                              "(ABI 4 can); install bubblewrap or allow the network")
            return "landlock", None
    reasons = "; ".join(found.reasons) or "no sandbox mechanism was asked for"
    return None, f"neither bubblewrap nor Landlock can sandbox commands here: {reasons}"


# -- one command ---------------------------------------------------------------------------------------


def writable_paths(policy: SandboxPolicy, cwd: str) -> list[str]:
    """What a command may write under ``policy`` (besides ``/dev``), symbolic links resolved."""
    import tempfile

    if policy.mode != "workspace-write":
        return []
    out: list[str] = []
    for path in (cwd, tempfile.gettempdir(), *policy.writable_roots):
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in out:
            out.append(real)
    return out


def sandboxed(argv: Sequence[str], cwd: str, policy: SandboxPolicy) -> list[str]:
    """``argv`` as it runs under ``policy`` (unchanged when it is ``off``); raises
    ``SandboxUnavailableError`` (nothing may run) when this machine cannot enforce it."""
    if not policy.active:
        return list(argv)
    mechanism, problem = mechanism_for(policy)
    if mechanism is None:
        raise SandboxUnavailableError(f"The sandbox ({policy.mode}) is on, but {problem}. The command was not run.")
    writable = writable_paths(policy, cwd)
    if mechanism == "bwrap":
        return _bwrap_argv(support().bwrap or "bwrap", argv, cwd, policy, writable)
    return _landlock_argv(argv, policy, writable, support().landlock_abi)


def _bwrap_argv(bwrap: str, argv: Sequence[str], cwd: str, policy: SandboxPolicy, writable: list[str]) -> list[str]:
    import tempfile

    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent"]
    if policy.network:
        out.append("--share-net")
    if policy.mode == "read-only":
        temp = os.path.realpath(tempfile.gettempdir())
        out += ["--tmpfs", temp]  # a private, empty one: gone with the command
        inside = os.path.realpath(cwd)
        if inside == temp or inside.startswith(temp + os.sep):  # the project lives in the temp dir: seen again
            out += ["--ro-bind", inside, inside]
    for path in writable:
        out += ["--bind", path, path]
    for path in protected_paths(policy, cwd):
        out += ["--ro-bind", path, path]
    return [*out, "--chdir", os.path.realpath(cwd), "--", *argv]


PROTECTED: Final = (".pi", os.path.join(".git", "hooks"), os.path.join(".git", "config"))
"""What stays read-only inside a writable project (bubblewrap): rpcd's own project settings and
extensions, and what git runs or reads outside the sandbox later."""


def protected_paths(policy: SandboxPolicy, cwd: str) -> list[str]:
    if policy.mode != "workspace-write":
        return []
    project = os.path.realpath(cwd)
    return [path for path in (os.path.join(project, name) for name in PROTECTED) if os.path.lexists(path)]


def _landlock_argv(argv: Sequence[str], policy: SandboxPolicy, writable: list[str], abi: int) -> list[str]:
    net = "1" if policy.network else "0"
    return [sys.executable, "-P", "-S", "-c", LANDLOCK_HELPER, str(abi), net, *writable, "--", *argv]


_SYS_LANDLOCK_CREATE_RULESET: Final = 444
LANDLOCK_HELPER: Final = r"""
import ctypes, os, sys
abi, net = int(sys.argv[1]), sys.argv[2] == "1"
split = sys.argv.index("--")
writable, argv = sys.argv[3:split], sys.argv[split + 1:]
libc = ctypes.CDLL(None, use_errno=True)
def check(value, what):
    if value < 0:
        sys.stderr.write("rpcd sandbox: %s failed: %s\n" % (what, os.strerror(ctypes.get_errno())))
        os._exit(126)
    return value
READ = 1 | 4 | 8                                   # execute, read_file, read_dir
WRITE = 2 | 16 | 32 | 64 | 128 | 256 | 512 | 1024 | 2048 | 4096  # write_file, remove_*, make_*
if abi >= 2: WRITE |= 1 << 13                     # refer
if abi >= 3: WRITE |= 1 << 14                     # truncate
DEVICES = 2 | (1 << 14 if abi >= 3 else 0) | (1 << 15 if abi >= 5 else 0)  # write_file, truncate, ioctl_dev
HANDLED = READ | WRITE | (1 << 15 if abi >= 5 else 0)
class Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]
class Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]
attr = Ruleset(HANDLED, 0 if net or abi < 4 else 1 | 2, 1 | 2 if abi >= 6 else 0)
size = 24 if abi >= 6 else 16 if abi >= 4 else 8
ruleset = check(libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)),
                "landlock_create_ruleset")
def allow(path, access):
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    rule = Beneath(access & HANDLED, fd)
    check(libc.syscall(445, ruleset, 1, ctypes.byref(rule), ctypes.c_uint32(0)), "landlock_add_rule " + path)
    os.close(fd)
allow("/", READ | (1 << 15 if abi >= 5 else 0))
allow("/dev", READ | DEVICES)
for path in writable:
    allow(path, READ | WRITE)
check(libc.prctl(38, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
check(libc.syscall(446, ruleset, ctypes.c_uint32(0)), "landlock_restrict_self")
os.close(ruleset)
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write("rpcd sandbox: %s: %s\n" % (argv[0], exc.strerror))
    os._exit(127)
"""
"""Run as ``python -P -S -c LANDLOCK_HELPER <abi> <net 0|1> <writable…> -- <argv…>``: restricts itself,
then executes ``argv`` (the standard library only, nothing of rpcd: fast, and nothing to shadow)."""


def describe(policy: SandboxPolicy, cwd: str) -> SandboxState:
    """The sandbox in force for a session in ``cwd`` (``getState.sandbox``)."""
    if not policy.active:
        return SandboxState()
    mechanism, problem = mechanism_for(policy)
    return SandboxState(mode=policy.mode, network=policy.network, mechanism=mechanism,
                        writable=tuple(writable_paths(policy, cwd)), problem=problem)


def sandbox_diagnostics(control: SandboxControl, configured: SandboxPolicy, warnings: Sequence[str],
                        cwd: str) -> list[Diagnostic]:
    """Warnings for a new session: a ``sandbox`` setting with ignored parts (``warnings``), and a
    sandbox that is on but cannot be had here (its commands will be refused)."""
    out = [Diagnostic("warning", warning) for warning in warnings]
    state = describe(control.effective(configured), cwd)
    if state.problem is not None:
        out.append(Diagnostic("warning", f"The sandbox ({state.mode}) is on, but {state.problem}: "
                                         "every command of the bash tool and the client's bash is refused"))
    return out
