# Sourced by scripts/*: make sure .venv exists at the repository root and holds
# the project (editable) with its dev extras. Re-installs only when pyproject.toml
# changed since the last install, so repeated runs start fast.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
    echo "[setup] creating virtual environment at $VENV" >&2
    python3 -m venv "$VENV"
fi
STAMP="$VENV/.rpcd-installed"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
    echo "[setup] installing rpcd and its dependencies into .venv" >&2
    "$PY" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
    "$PY" -m pip install --quiet --disable-pip-version-check -e "$ROOT[dev]" >&2
    touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
