"""Checkpoint audit checks (TQ2xx) for `tqdeploy doctor --model`. Importing this package registers them."""

from tqdeploy.modelchecks import checkpoint  # noqa: F401
