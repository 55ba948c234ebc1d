"""A check declares its inputs by its decorator and is handed exactly those, typed; one whose inputs are missing
is not called (issue 36 item 2)."""

from __future__ import annotations

import pytest

from tqdeploy.doctor import registry as registry_module
from tqdeploy.doctor.registry import (
    REGISTRY,
    CheckContext,
    HostInputs,
    ModelOnHostInputs,
    check_options,
    host_check,
    model_on_host_check,
    passed,
)
from tqdeploy.model.facts import ModelFacts
from tqdeploy.snapshot import HostSnapshot


@pytest.fixture
def registry(monkeypatch):
    """An empty registry for the checks a test declares; the real one is left as it is."""
    monkeypatch.setattr(registry_module, "REGISTRY", {})
    return registry_module.REGISTRY


def test_a_check_gets_the_inputs_it_declared_and_is_not_called_without_them(registry):
    seen: list[object] = []

    @model_on_host_check("TQ298", "model", "needs both")
    def both(inputs: ModelOnHostInputs):
        seen.append(inputs)
        return passed({"gpus": len(inputs.host.gpus)})

    host, model = HostSnapshot(), ModelFacts(source="/models/x")
    (skip,) = registry["TQ298"].run(CheckContext(model=model))
    assert skip.severity.value == "skipped" and skip.evidence["reason"] == "no host given" and seen == []
    (ok,) = registry["TQ298"].run(CheckContext(host=host, model=model, options={"vllm_version": "0.32.0"}))
    assert ok.severity.value == "ok" and ok.id == "TQ298" and ok.title == "needs both"
    assert seen == [ModelOnHostInputs(model=model, host=host, options={"vllm_version": "0.32.0"})]
    assert registry["TQ298"].needs == ("model", "host")


def test_a_host_check_sees_the_model_only_when_one_is_given_and_a_raise_names_it(registry):
    @host_check("TQ198", "test", "broken on purpose")
    def broken(inputs: HostInputs):
        raise ValueError(f"model {inputs.model}")

    (failed,) = registry["TQ198"].run(CheckContext(host=HostSnapshot()))
    assert failed.severity.value == "error" and "check TQ198 (broken) failed" in failed.title
    assert failed.evidence == {"exception": "ValueError: model None"}
    assert "TQ198" not in REGISTRY  # the real registry untouched


def test_options_reach_the_checks_only_with_their_declared_types():
    given = {"tensor_parallel_size": "2", "max_model_len": 4096, "gpu_memory_utilization": 1, "enforce_eager": True}
    assert check_options(given) == {"max_model_len": 4096, "gpu_memory_utilization": 1}
