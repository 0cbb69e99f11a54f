"""How a sweep point that cannot be measured at its settings says so: it raises PointFailed with a
one-line reason, and the job records the point as failed with that reason instead of stopping the sweep
(the design's rule: a failed point is filed, never silently dropped)."""

from __future__ import annotations


class PointFailed(Exception):
    """This point (model, shape, precision, mode) cannot be measured here; the message says why."""


def first_line(err: BaseException) -> str:
    """An error's first line, at most 300 characters: enough to tell why, short enough for a table cell."""
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else "(no message)"
