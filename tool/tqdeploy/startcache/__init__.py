"""The build's start-up caches as one portable, verified artifact (`tqdeploy cache export|import`, issue 38).

A start fills VLLM_CACHE_ROOT with every cache it writes (render/caches.py: vLLM's compile cache, inductor,
Triton, FlashInfer, ...). A new node starts cold unless it gets them; this package carries them there and refuses
to when they were made for something else:
- hostfacts: what makes them valid, read on this host (the build's interpreter, NVML, /proc/cpuinfo);
- manifest: the typed tqdeploy.cache/1 record of those facts and of every file carried (sha256 each);
- compare: what differs between an artifact and this host, and which differences refuse an import;
- secrets: no file that holds the build's key or a secret-shaped string leaves the volume;
- pack / unpack: one tar.xz, deterministic, bounded, extracted safely and renamed into place.
docs/startcache.md says which vLLM code each manifest field comes from.
"""
