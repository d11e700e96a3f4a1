"""How much CPU this process and everything else on the machine used over a measurement.

On a shared 2-core machine a benchmark row is only as good as the cores it actually got:
``count_many`` cannot be 2x faster than a serial loop while another process holds a core.
``others`` (cores' worth of CPU used by other processes, from ``/proc/stat``, hypervisor steal
included) tells a noisy row from a slow library. Linux only; elsewhere ``others`` is None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

try:
    _TICK = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _TICK = 100


def _machine_busy_seconds() -> float | None:
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 8:
        return None
    # user nice system idle iowait irq softirq steal ...: all but idle and iowait are busy.
    return (sum(fields[:3]) + sum(fields[5:8])) / _TICK


@dataclass(frozen=True)
class Sample:
    wall: float
    process: float
    machine: float | None

    @classmethod
    def now(cls) -> Sample:
        return cls(time.perf_counter(), time.process_time(), _machine_busy_seconds())


def usage(start: Sample, end: Sample) -> dict[str, float | None]:
    """Cores' worth of CPU between two samples: by this process (all threads) and by others."""
    wall = max(end.wall - start.wall, 1e-9)
    own = end.process - start.process
    others = None
    if start.machine is not None and end.machine is not None:
        others = max(0.0, (end.machine - start.machine) - own) / wall
    return {"cpu_self": own / wall, "cpu_others": others}
