"""`tqdeploy check`: whether a running server's answers are right (perplexity of a fixed text, greedy answers
asked twice, recall of a planted fact), against a reference recorded with an unquantized KV cache.

Modules: fixed.py (the shipped passage and prompts), probes.py (requests and answer parsing), detect.py (pure
detectors), reference.py (record, store, load, fingerprint), thresholds.py (checks/answer_thresholds.json),
verdict.py (findings TQ480-TQ488), run.py (one run within a time budget), result.py (output and state summary),
record.py (`--record-reference`: the build started with kv_cache_dtype auto). docs/answers.md explains the figures.
"""
