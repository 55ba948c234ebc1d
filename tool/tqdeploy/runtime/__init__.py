"""Runtimes that start what `tqdeploy build` rendered: the process runtime (serve.sh with a local vLLM) and
the docker runtime (the built image through the Docker SDK), behind one interface."""
