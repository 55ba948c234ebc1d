"""One package per runtime (runtime/base.py's interface), each registered with one line in runtime/registry.py.

Everything a runtime needs lives in its folder: process (serve.sh with a local vLLM under the supervisor), docker
(the built image through the Docker SDK, behind tqdeploy.adaptors.docker) and multinode (a multi-node build on one
host). The shared machinery (state, readiness, the marker sweep, classification) is runtime/'s core and names none.
"""
