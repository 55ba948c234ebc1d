"""The check's bounds per KV-cache dtype (checks/answer_thresholds.json), each with the measurement it comes from
(docs/answers.md). Read once and validated: a bad file is one line naming it, never a bound of the wrong type."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache

from tqdeploy.errors import TQError
from tqdeploy.resources import data_dir

FILE = "answer_thresholds.json"


@dataclass(frozen=True)
class Bound:
    value: float
    source: str


@dataclass(frozen=True)
class Thresholds:
    ceiling: Bound  # perplexity above which the answers are garbage, with no reference needed
    ratios: dict[str, Bound]  # kv dtype -> largest perplexity / reference perplexity
    default_ratio: Bound

    def ratio_for(self, kv_dtype: str | None) -> Bound:
        return self.ratios.get(kv_dtype or "auto", self.default_ratio)


def _bound(data: object, where: str) -> Bound:
    value = data.get("value", data.get("max")) if isinstance(data, dict) else None
    source = data.get("source") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 1:
        raise TQError(f"checks/{FILE}: {where} is not a number >= 1", "reinstall tqdeploy")
    if not isinstance(source, str) or not source:
        raise TQError(f"checks/{FILE}: {where} names no source measurement", "reinstall tqdeploy")
    return Bound(float(value), source)


@lru_cache(maxsize=1)
def load_thresholds() -> Thresholds:
    path = data_dir("checks") / FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise TQError(f"checks/{FILE} is not readable JSON ({err})", "reinstall tqdeploy") from None
    ratios = data.get("perplexity_ratio") if isinstance(data, dict) else None
    if not isinstance(ratios, dict):
        raise TQError(f"checks/{FILE} has no perplexity_ratio table", "reinstall tqdeploy")
    return Thresholds(
        _bound(data.get("perplexity_ceiling"), "perplexity_ceiling"),
        {str(k): _bound(v, f"perplexity_ratio.{k}") for k, v in ratios.items()},
        _bound(data.get("perplexity_ratio_default"), "perplexity_ratio_default"),
    )
