"""Every lint rule, one module per area; importing this package registers them (tqdeploy.lint.registry).

arguments   TQ301-TQ309, TQ312, TQ314  vLLM's own arguments as its parser reads them
advice      TQ310                      the false-advice catalogue (checks/false_advice.json)
image       TQ311, TQ313               which image / vLLM release the command runs
turboquant  TQ320, TQ321               TurboQuant KV dtypes with other options
exposure    TQ322, TQ323               who can reach the server, credentials on argv
docker      TQ330-TQ334                docker run options around a vLLM image
model       TQ340-TQ343                the checkpoint (--model) and the GPUs (--snapshot / --gpu)
python      TQ315                      LLM(...) / EngineArgs(...) keywords in a Python snippet (--file x.py)
"""

from tqdeploy.lint.rules import advice, arguments, docker, exposure, image, model, python, turboquant  # noqa: F401
