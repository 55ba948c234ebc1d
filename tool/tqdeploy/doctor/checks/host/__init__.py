"""Host checks (TQ1xx) for `tqdeploy doctor`. Importing this package registers them.

Each module covers one area; every check reads only ``ctx.host`` (a HostSnapshot) and
``ctx.options`` (target vLLM version, image CUDA...), never the machine.
"""

from tqdeploy.doctor.checks.host import (  # noqa: F401
    containers,
    driver,
    gpu,
    hfenv,
    keyfile,
    libs,
    multinode,
    pcie,
    probe_failures,
    system,
    topology,
)
