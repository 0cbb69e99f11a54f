"""The error the fusion library raises for bad input."""

from __future__ import annotations

from ..errors import GpureproError


class FusionError(GpureproError, ValueError):
    """Bad input to the fusion library (an unknown workload, models that differ, a hyperparameter of the
    wrong length). A ValueError for library callers, a GpureproError so the CLI prints it plainly."""
