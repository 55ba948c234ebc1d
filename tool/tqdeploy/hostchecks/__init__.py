"""Host checks (TQ1xx) for `tqdeploy doctor`. Importing this package registers them.

Each module covers one area; every check reads only ``ctx.host`` (a HostSnapshot) and
``ctx.options`` (target vLLM version, image CUDA...), never the machine.
"""

from tqdeploy.hostchecks import containers, driver, gpu, hfenv, libs, pcie, probes, system, topology  # noqa: F401
