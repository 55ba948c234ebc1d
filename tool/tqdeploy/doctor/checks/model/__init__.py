"""Checkpoint audit checks (TQ2xx) for `tqdeploy doctor --model`. Importing this package registers them."""

from tqdeploy.doctor.checks.model import checkpoint, fit  # noqa: F401
