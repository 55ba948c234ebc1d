"""Every doctor check: host (TQ1xx, tqdeploy.doctor.checks.host) and checkpoint (TQ2xx, .model).
Importing this package registers them in tqdeploy.doctor.registry."""

from tqdeploy.doctor.checks import host, model  # noqa: F401
