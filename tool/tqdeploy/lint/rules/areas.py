"""The catalogue of lint rule areas: one module per area, one line each, with the ids its rules report.

Importing a module registers its rules (tqdeploy.lint.registry.rule); importing this module registers them all.
A new area is one more line at the end; a rule that fits an area joins that module (docs/architecture.md, the
`rule` recipe).
"""

from __future__ import annotations

import tqdeploy.lint.rules.advice  # noqa: F401  (TQ310: the false-advice catalogue, checks/false_advice.json)
import tqdeploy.lint.rules.arguments  # noqa: F401  (TQ301-TQ309, TQ312, TQ314: vLLM's own arguments)
import tqdeploy.lint.rules.cachekey  # noqa: F401  (TQ344: VLLM_API_KEY where it enters the compile cache)
import tqdeploy.lint.rules.docker  # noqa: F401  (TQ330-TQ334: docker run options around a vLLM image)
import tqdeploy.lint.rules.exposure  # noqa: F401  (TQ322, TQ323: who reaches the server, credentials on argv)
import tqdeploy.lint.rules.image  # noqa: F401  (TQ311, TQ313: which image / vLLM release the command runs)
import tqdeploy.lint.rules.model  # noqa: F401  (TQ340-TQ343: the checkpoint, --model, and the GPUs)
import tqdeploy.lint.rules.multinode  # noqa: F401  (TQ345-TQ347: multi-node ports, interface, layout)
import tqdeploy.lint.rules.python  # noqa: F401  (TQ315: the keywords of LLM, EngineArgs in Python)
import tqdeploy.lint.rules.turboquant  # noqa: F401  (TQ320, TQ321, TQ348, TQ349: TurboQuant KV dtypes)
