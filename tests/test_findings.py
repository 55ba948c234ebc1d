from tqdeploy.findings import Finding, Severity, exit_code_for, group_by_area, summarize


def f(id, sev, area):
    return Finding(id=id, severity=Severity(sev), title=id, area=area)


def test_areas_ordered_by_their_worst_finding_and_each_area_worst_first():
    findings = [
        f("A1", "ok", "gpu"),
        f("B1", "info", "system"),
        f("A2", "error", "gpu"),
        f("C1", "warn", "pcie"),
        f("B2", "warn", "system"),
    ]
    groups = group_by_area(findings)
    assert [area for area, _ in groups] == ["gpu", "pcie", "system"]
    assert [x.id for x in groups[0][1]] == ["A2", "A1"]
    assert [x.id for x in groups[2][1]] == ["B2", "B1"]


def test_exit_code_threshold_and_summary():
    findings = [f("A", "warn", "x"), f("B", "ok", "x")]
    assert exit_code_for(findings, "error") == 0
    assert exit_code_for(findings, "warn") == 1
    assert summarize(findings)["warn"] == 1 and summarize(findings)["total"] == 2


def test_finding_json_round_trip():
    one = Finding("TQ101", Severity.ERROR, "t", {"k": 1}, "fix it", "driver")
    assert Finding.from_dict(one.to_dict()) == one
