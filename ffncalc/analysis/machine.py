"""What this machine and this process leave a run: the memory a device has free, on a CPU held to the process's
own limits (its address-space and data limits, its control group's memory limit). torch is imported only for a
GPU's figures."""

from __future__ import annotations

import os


def free_bytes(device) -> int:
    """Memory a run may still take on the device: on the CPU, the machine's available memory, or less where this
    process is held to less (its address-space or data limit, its control group's memory limit: a container's)."""
    if device.type in ("cuda", "mps"):
        import torch

        if device.type == "cuda":
            return torch.cuda.mem_get_info(device)[0]
        return torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory()
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        free = int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return min([free, *process_room()])


def process_room() -> list[int]:
    """Bytes this process may still allocate under each limit set on it: RLIMIT_AS and RLIMIT_DATA less what it
    maps now (VmSize, VmData), and each control group's memory.max (cgroup v2; memory.limit_in_bytes in v1) less
    its current use, up the hierarchy."""
    import resource

    room = []
    status = _status()
    for limit, used in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft = resource.getrlimit(limit)[0]
        if soft != resource.RLIM_INFINITY and used in status:
            room.append(max(0, soft - status[used]))
    room += [max(0, high - used) for high, used in _cgroup_limits()]
    return room


def _status() -> dict[str, int]:
    """/proc/self/status's sizes in bytes (VmSize, VmData, …); empty where there is no such file."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                parts = value.split()
                if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
                    out[key] = int(parts[0]) * 1024
    except OSError:
        pass
    return out


def _cgroup_limits(listing: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup") -> list[tuple[int, int]]:
    """(limit, usage) in bytes of each memory-limited control group this process is in (``listing``), itself and
    its parents, under the hierarchy's ``root``."""
    from pathlib import Path

    found = []
    try:
        lines = Path(listing).read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""
        if not v2 and "memory" not in controllers.split(","):
            continue
        folder = Path(root) / (path.lstrip("/") if v2 else "memory/" + path.lstrip("/"))
        names = ("memory.max", "memory.current") if v2 else ("memory.limit_in_bytes", "memory.usage_in_bytes")
        while True:
            try:
                high, used = ((folder / n).read_text().strip() for n in names)
                if high.isdigit() and used.isdigit() and int(high) < 2**60:  # "max" or v1's huge "unlimited"
                    found.append((int(high), int(used)))
            except OSError:
                pass
            if folder == Path(root) or folder.parent == folder or not str(folder).startswith(root):
                break
            folder = folder.parent
    return found
