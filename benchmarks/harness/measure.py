"""What a benchmark reads of a process: memory and CPU time from /proc, peaks from a thread."""

import threading
import time
from collections.abc import Callable
from pathlib import Path


def proc_status_kib(field: str) -> int:
    """``VmRSS``/``VmHWM`` of this process in KiB (0 where /proc is unavailable)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of ``pid`` in clock ticks, from ``/proc/<pid>/stat`` (None when gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its ")".
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of the whole line


class PeakSampler(threading.Thread):
    """Keeps the highest value each probe returned, sampled every ``interval`` seconds.

    A thread, so that it samples while the event loop is busy. A probe that returns
    None has nothing to read this time; one that never returned a number has no peak.
    """

    def __init__(self, interval: float, **probes: Callable[[], int | None]) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.probes = probes
        self.peaks: dict[str, int] = {}
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            for name, probe in self.probes.items():
                value = probe()
                if value is not None:
                    self.peaks[name] = max(self.peaks.get(name, value), value)
            time.sleep(self.interval)

    def finish(self) -> None:
        self._done.set()
        self.join()
