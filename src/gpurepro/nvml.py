"""Everything this project asks NVML, in one place, with its quirks handled here.

NVML answers "not supported" for many queries on some boards (serial numbers on GeForce cards, ECC on
consumer parts, energy before Volta); those come back as None instead of an exception, so callers can
record what is missing rather than crash.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

T = TypeVar("T")

try:  # nvidia-ml-py is a dependency, but keep import failures readable on odd installs
    import pynvml
except ImportError:  # pragma: no cover - exercised only on broken installs
    pynvml = None  # type: ignore[assignment]


class NvmlUnavailable(RuntimeError):
    """NVML cannot be used on this machine (no driver, no GPU, library missing)."""


def number_cuda_like_nvml() -> None:
    """Make CUDA (torch, the kernels, any child process) number GPUs by PCI bus as NVML does, so GPU index N
    is one card for the workload and for its telemetry. CUDA's default order is fastest first. Call before
    CUDA starts; a CUDA_DEVICE_ORDER the user set is kept."""
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")


@contextlib.contextmanager
def session() -> Iterator[None]:
    """Initialise NVML for the duration of a block; NvmlUnavailable says why it cannot be."""
    if pynvml is None:
        raise NvmlUnavailable("the nvidia-ml-py package is not installed")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        raise NvmlUnavailable(f"NVML could not start ({err}); no NVIDIA driver or GPU here") from err
    try:
        yield
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()


def available() -> tuple[bool, str]:
    """(True, "") when NVML works and sees at least one GPU, else (False, reason)."""
    try:
        with session():
            count = pynvml.nvmlDeviceGetCount()
    except NvmlUnavailable as err:
        return False, str(err)
    if count == 0:
        return False, "NVML works but reports no GPU"
    return True, ""


def optional(fn: Callable[..., T], *args: Any) -> T | None:
    """Call an NVML query, mapping 'not supported' and similar refusals to None."""
    try:
        return fn(*args)
    except pynvml.NVMLError:
        return None


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def device_count() -> int:
    return pynvml.nvmlDeviceGetCount()


def handle(index: int) -> Any:
    count = pynvml.nvmlDeviceGetCount()
    if not 0 <= index < count:
        raise NvmlUnavailable(f"GPU index {index} does not exist: NVML sees {count} GPU(s), 0..{count - 1}")
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def clock_event_reasons(h: Any) -> int | None:
    """Bitmask of why clocks are held below their maximum (the 'throttle reasons')."""
    fn = (
        getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    return optional(fn, h)


def cpus_of_mask(words: Sequence[int], word_bits: int = 64) -> set[int]:
    """The CPU indices set in an NVML CPU mask: word i, bit b is CPU i * word_bits + b (NVML fills an array
    of unsigned longs, lowest CPUs in the first word)."""
    return {
        i * word_bits + bit for i, word in enumerate(words) for bit in range(word_bits) if word >> bit & 1
    }


def cpu_affinity(h: Any) -> tuple[set[int], str] | None:
    """The CPUs nearest a GPU and what "nearest" means: its NUMA node where NVML can say
    (nvmlDeviceGetCpuAffinityWithinScope, newer drivers), else NVML's ideal set for the device (its socket
    on most hosts). None where NVML gives neither (not supported, or an empty mask, as in some VMs)."""
    words = (os.cpu_count() or 1) // 64 + 1  # one bit per CPU, in 64-bit words
    scoped = getattr(pynvml, "nvmlDeviceGetCpuAffinityWithinScope", None)
    scope = getattr(pynvml, "NVML_AFFINITY_SCOPE_NODE", None)
    tries = [] if scoped is None or scope is None else [(scoped, (h, words, scope), "the GPU's NUMA node")]
    tries.append((pynvml.nvmlDeviceGetCpuAffinity, (h, words), "NVML's ideal CPUs for the GPU"))
    for fn, args, meaning in tries:
        mask = optional(fn, *args)
        if mask is not None:
            cpus = cpus_of_mask(list(mask), ctypes.sizeof(mask._type_) * 8)
            if cpus:
                return cpus, meaning
    return None


# Names of the clock-event reason bits, from nvml.h, so traces can say "sw_thermal" instead of 0x20.
CLOCK_EVENT_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# Reasons that mean the GPU ran slower than it could have; idle and app-clock settings are not throttling.
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def describe_reasons(mask: int | None) -> str:
    """'sw_power_cap|sw_thermal_slowdown' for a bitmask; '' for none, 'unknown' when not readable."""
    if mask is None:
        return "unknown"
    return "|".join(name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit)


@dataclass(frozen=True)
class GpuInfo:
    """What a reviewer needs to know about one GPU to trust (or question) its numbers."""

    index: int
    name: str
    uuid: str
    serial: str | None
    pci_bus_id: str | None
    driver_version: str
    cuda_driver_version: str | None
    memory_total_mib: float | None
    power_limit_w: float | None
    power_limit_default_w: float | None
    power_limit_enforced_w: float | None
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    sm_clock_max_mhz: int | None
    mem_clock_max_mhz: int | None
    app_sm_clock_mhz: int | None
    persistence_mode: bool | None
    ecc_mode: bool | None
    compute_mode: str | None
    mig_mode: bool | None
    compute_capability: str | None
    temperature_c: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


def _milliwatts(value: int | None) -> float | None:
    return None if value is None else value / 1000.0


def _cuda_driver_version() -> str | None:
    version = optional(pynvml.nvmlSystemGetCudaDriverVersion)
    return None if version is None else f"{version // 1000}.{(version % 1000) // 10}"


def gpu_info(index: int) -> GpuInfo:
    """Read one GPU's identity and settings. Call inside `session()`."""
    h = handle(index)
    memory = optional(pynvml.nvmlDeviceGetMemoryInfo, h)
    ecc = optional(pynvml.nvmlDeviceGetEccMode, h)
    mig = optional(pynvml.nvmlDeviceGetMigMode, h)
    capability = optional(pynvml.nvmlDeviceGetCudaComputeCapability, h)
    compute_mode = optional(pynvml.nvmlDeviceGetComputeMode, h)
    persistence = optional(pynvml.nvmlDeviceGetPersistenceMode, h)
    return GpuInfo(
        index=index,
        name=_text(pynvml.nvmlDeviceGetName(h)) or "unknown",
        uuid=_text(pynvml.nvmlDeviceGetUUID(h)) or "unknown",
        serial=_text(optional(pynvml.nvmlDeviceGetSerial, h)),
        pci_bus_id=_text(getattr(optional(pynvml.nvmlDeviceGetPciInfo, h), "busId", None)),
        driver_version=_text(pynvml.nvmlSystemGetDriverVersion()) or "unknown",
        cuda_driver_version=_cuda_driver_version(),
        memory_total_mib=None if memory is None else memory.total / 2**20,
        power_limit_w=_milliwatts(optional(pynvml.nvmlDeviceGetPowerManagementLimit, h)),
        power_limit_default_w=_milliwatts(optional(pynvml.nvmlDeviceGetPowerManagementDefaultLimit, h)),
        power_limit_enforced_w=_milliwatts(optional(pynvml.nvmlDeviceGetEnforcedPowerLimit, h)),
        sm_clock_mhz=optional(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM),
        mem_clock_mhz=optional(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM),
        sm_clock_max_mhz=optional(pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_SM),
        mem_clock_max_mhz=optional(pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_MEM),
        app_sm_clock_mhz=optional(pynvml.nvmlDeviceGetApplicationsClock, h, pynvml.NVML_CLOCK_SM),
        persistence_mode=None if persistence is None else bool(persistence),
        ecc_mode=None if ecc is None else bool(ecc[0]),
        compute_mode=None if compute_mode is None else _COMPUTE_MODES.get(compute_mode, str(compute_mode)),
        mig_mode=None if mig is None else bool(mig[0]),
        compute_capability=None if capability is None else f"{capability[0]}.{capability[1]}",
        temperature_c=optional(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
    )


def all_gpu_info() -> list[GpuInfo]:
    """Every GPU NVML sees; raises NvmlUnavailable when it cannot look."""
    with session():
        return [gpu_info(i) for i in range(device_count())]
