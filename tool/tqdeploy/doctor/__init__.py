"""`tqdeploy doctor` in one place.

registry.py     Check, @host_check / @model_check / @model_on_host_check, CheckContext and the typed inputs
                each check declares (HostInputs, ModelInputs, ModelOnHostInputs), run_checks
checks/host/    the host checks (TQ1xx), one module per area
checks/model/   the checkpoint audit (TQ2xx, --model)
run.py          run_doctor: probe or replay a host snapshot, lint a launch command, run the checks
report.py       DoctorResult: the findings as a table or as JSON (tqdeploy.doctor/1)

The host snapshot itself (tqdeploy.snapshot) and the probes that record it (tqdeploy.probe) are shared
with plan, lint and init, so they stay outside.
"""

from tqdeploy.doctor.report import DoctorResult
from tqdeploy.doctor.run import run_doctor

__all__ = ["DoctorResult", "run_doctor"]
