# Sourced by scripts/*: make sure .venv exists at the repository root and holds
# the project (editable) with its dev extras. Re-installs only when pyproject.toml
# changed since the last install, so repeated runs start fast.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
    BASE_PY="${PYTHON:-python3}"  # PYTHON=python3.12 ./scripts/test picks another interpreter
    if ! "$BASE_PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "[setup] rpcd needs Python >= 3.11 with venv; '$BASE_PY' is $("$BASE_PY" -V 2>&1 || echo missing)." >&2
        echo "[setup] set PYTHON=/path/to/python3.11+ and retry" >&2
        exit 1
    fi
    echo "[setup] creating virtual environment at $VENV" >&2
    "$BASE_PY" -m venv "$VENV"
fi
# RPCD_EXTRAS: what to install besides rpcd itself — "dev" (the test toolchain: pytest, mypy, ruff …)
# by default; scripts/demo sets it empty, so a first ./scripts/demo installs only what the daemon and
# rpcctl need. A dev install counts as a runtime install too.
EXTRAS="${RPCD_EXTRAS-dev}"
fresh() { [ -f "$1" ] && [ ! "$ROOT/pyproject.toml" -nt "$1" ]; }
STAMP="$VENV/.rpcd-installed${EXTRAS:+-$EXTRAS}"
if ! fresh "$STAMP" && ! { [ -z "$EXTRAS" ] && fresh "$VENV/.rpcd-installed-dev"; }; then
    echo "[setup] installing rpcd${EXTRAS:+ and its $EXTRAS tools} into .venv" >&2
    "$PY" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
    "$PY" -m pip install --quiet --disable-pip-version-check -e "$ROOT${EXTRAS:+[$EXTRAS]}" >&2
    touch "$STAMP"
    # Type checkers do not run setuptools' editable import hook: a path entry holding only `rpcd`
    # (a link to the checkout's) lets mypy/pyright in this venv see rpcd, rpcd.protocol, rpcd.clients.
    SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    mkdir -p "$VENV/rpcd-typecheck"
    ln -sfn "$ROOT/rpcd" "$VENV/rpcd-typecheck/rpcd"
    echo "$VENV/rpcd-typecheck" > "$SITE/rpcd-typecheck.pth"
fi
export PATH="$VENV/bin:$PATH"
# The checkout's bytecode, as a regular install has it (pip compiles at install time): with
# PYTHONDONTWRITEBYTECODE=1 (set in many containers and CI images) the interpreter never writes
# __pycache__ for the editable checkout, so every `python -m rpcd` compiled ~140 modules from
# source before its first answer (~0.3-0.5 s). Only changed files are recompiled here.
"$PY" -m compileall -q "$ROOT/rpcd" "$ROOT/protocol" "$ROOT/clients" >/dev/null || true
# The same for the methods attrs compiles for every class at import (~50 ms of a daemon's start):
# rpcd.core.attrs_methods keeps their bytecode beside the checkout's; rebuilt only when a module changed.
"$PY" -P -m rpcd.core.attrs_methods || true
