from tqdeploy.runtime.logstamp import split, stamp


def test_a_stamped_line_round_trips():
    line = "INFO 12-01 08:05:03 [loader.py:1] Loading weights took 0.01 seconds"
    assert split(stamp(line, 1764578703.1234) + "\n") == (1764578703.123, line)


def test_a_raw_vllm_line_has_no_stamp():
    line = "(EngineCore pid=12) INFO 12-01 08:05:03 [x.py:2] 1234.5|not a stamp"
    assert split(line) == (None, line)
