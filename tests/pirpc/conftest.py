"""The real Pi 0.85.0 for this folder's differential tests (the same fixture as ``tests/pi_compat``)."""

from tests.pi_compat.conftest import pi_oracle

__all__ = ["pi_oracle"]
