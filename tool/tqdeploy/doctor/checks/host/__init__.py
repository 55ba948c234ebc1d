"""Host checks (TQ1xx) for `tqdeploy doctor`. Importing this package registers them.

Each module covers one area; every check is a ``@host_check`` and reads only the HostInputs it is handed
(``host``: the HostSnapshot, ``options``: target vLLM version, image CUDA..., ``model`` when --model is
given), never the machine.
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
