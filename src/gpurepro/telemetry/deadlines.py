"""When a sampler takes its next sample: on absolute deadlines start + k/rate of the monotonic clock.

A sampler that sleeps one period after each read drifts by the read's duration every sample and ends
below its rate. Fixed deadlines hold the rate over any length of run; a sample that comes late is taken
at once, and a deadline passed by more than a whole period without a sample is counted as dropped, so
a trace says how many samples it is missing and why its rate fell short. Both samplers (thread and
process) use this, so their rates and dropped counts compare. Why samples came late is told apart too:
the sampler woke late (the host's CPUs were busy) or the read itself was slow (the driver was busy).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class Deadlines:
    """The sampling schedule of one run, started when constructed (the first sample is due at once)."""

    def __init__(self, rate_hz: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.period_s = 1.0 / rate_hz
        self._clock = clock
        self._start = clock()
        self._taken = 0  # index of the deadline the latest sample was taken for
        self._read_began = self._start
        self.dropped = 0
        self.latest_wake_s = 0.0  # the most a read began after its deadline
        self.slowest_read_s = 0.0  # the longest one read took

    def reading(self) -> None:
        """Call as a sample's read begins, so that wait_s() can tell a late wake-up from a slow read."""
        self._read_began = self._clock()
        due = self._start + self._taken * self.period_s
        self.latest_wake_s = max(self.latest_wake_s, self._read_began - due)

    def wait_s(self) -> float:
        """After a sample: seconds to wait until the next one is due (0 when it is already late).

        Deadlines that passed entirely while the previous sample was being read are skipped and counted
        as dropped, rather than caught up with a burst of samples."""
        now = self._clock()
        self.slowest_read_s = max(self.slowest_read_s, now - self._read_began)
        self._taken += 1
        due_slot = math.floor((now - self._start) / self.period_s)
        if due_slot > self._taken:
            self.dropped += due_slot - self._taken
            self._taken = due_slot
        return max(0.0, self._start + self._taken * self.period_s - now)
