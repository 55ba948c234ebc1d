"""The JSON that profile builds: profile.json's sections (weights, kv, load, context, the disk's figures) and the
interleaved comparison's result file are dicts of JSON values, read back by key (report.py, scripts, tests) and
written by json.dumps. Standard library only: disk.py imports it on a bare GPU host."""

from __future__ import annotations

from typing import Any

# one object of such a document; its values are whatever JSON holds, hence Any
JSONObject = dict[str, Any]
