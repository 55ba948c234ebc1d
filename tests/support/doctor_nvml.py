"""An NVML stand-in at the adapter boundary: pynvml's function names over a dict of GPUs.

It raises errors the way pynvml does (an exception per unsupported query) so the probe's
per-field error handling is exercised. Only what the probe calls is implemented.
"""

from __future__ import annotations

from types import SimpleNamespace


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    def __str__(self):
        return "Not Supported"


class NVMLError_InvalidArgument(NVMLError):
    def __str__(self):
        return "Invalid Argument"


class NVMLError_GpuIsLost(NVMLError):
    def __str__(self):
        return "GPU is lost"


class NVMLError_LibraryNotFound(NVMLError):
    def __str__(self):
        return "NVML Shared Library Not Found"


class FakeNVML:
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(
        self,
        gpus: list[dict],
        driver="580.159.04",
        cuda=13000,
        init_error: Exception | None = None,
        topology: dict | None = None,
        p2p: dict | None = None,
    ):
        self.gpus, self.driver, self.cuda, self.init_error = gpus, driver, cuda, init_error
        self.topology = topology or {}
        self.p2p = p2p or {}
        self.shutdown_called = False

    def _get(self, h, key):
        value = self.gpus[h].get(key, NVMLError_NotSupported())
        if isinstance(value, Exception):
            raise value
        return value

    def nvmlInit(self):
        if self.init_error:
            raise self.init_error

    def nvmlShutdown(self):
        self.shutdown_called = True

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return self.cuda

    def nvmlSystemGetNVMLVersion(self):
        return "13." + self.driver

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        if "handle_error" in self.gpus[i]:  # e.g. a GPU that fell off the bus (Xid 79)
            raise self.gpus[i]["handle_error"]
        return i

    def nvmlDeviceGetName(self, h):
        return self._get(h, "name")

    def nvmlDeviceGetUUID(self, h):
        return self._get(h, "uuid")

    def nvmlDeviceGetMemoryInfo(self, h):
        total, used = self._get(h, "memory")
        return SimpleNamespace(total=total, used=used, free=total - used)

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return tuple(self._get(h, "cc"))

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=self._get(h, "bus").encode())  # older pynvml returns bytes

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return self._get(h, "gen")[0]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return self._get(h, "gen")[1]

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, h):
        return self._get(h, "gen")[2]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return self._get(h, "width")[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return self._get(h, "width")[1]

    def nvmlDeviceGetEccMode(self, h):
        return self._get(h, "ecc")

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h):
        return self._get(h, "retired_pending")

    def nvmlDeviceGetRemappedRows(self, h):
        return self._get(h, "remapped")

    def nvmlDeviceGetPersistenceMode(self, h):
        return self._get(h, "persistence")

    def nvmlDeviceGetMigMode(self, h):
        return self._get(h, "mig")

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem) for pid, mem in self.gpus[h].get("procs", [])]

    def nvmlDeviceGetNvLinkState(self, h, link):
        links = self.gpus[h].get("nvlinks")
        if links is None:
            raise NVMLError_NotSupported()
        if link >= len(links):
            raise NVMLError_InvalidArgument()
        return 1 if links[link] else 0

    def nvmlDeviceGetNvLinkVersion(self, h, link):
        return 4

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        return SimpleNamespace(busId=self.gpus[h]["nvlinks"][link])

    def nvmlDeviceGetTopologyCommonAncestor(self, a, b):
        return self.topology.get((a, b), 30)

    def nvmlDeviceGetP2PStatus(self, a, b, index):
        return self.p2p.get((a, b, index), 0)


def h200_like(**over) -> dict:
    gpu = {
        "name": "NVIDIA H200",
        "uuid": "GPU-0",
        "memory": (150754820096, 644939776),
        "cc": (9, 0),
        "bus": "00000000:00:06.0",
        "gen": (5, 5, 5),
        "width": (16, 16),
        "ecc": (1, 1),
        "retired_pending": NVMLError_NotSupported(),
        "remapped": (0, 0, 0, 0),
        "persistence": 1,
        "mig": (0, 0),
    }
    gpu.update(over)
    return gpu
