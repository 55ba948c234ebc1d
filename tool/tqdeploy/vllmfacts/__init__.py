"""What tqdeploy knows about vLLM, per release, as data: one table each, low in the layers so that lint,
spec, plan, runtime and profile all read the same facts.

  schema.py       the argument schema of `vllm serve` and the environment variables vllm/envs.py reads
                  (checks/vllm-schema/<version>.json, extracted from vLLM's own parser)
  logpatterns.py  the log lines vLLM prints at start-up and on failure, each beside the vLLM source that prints it
"""
