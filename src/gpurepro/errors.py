"""Errors that the CLI reports as a plain message (no traceback) with a non-zero exit."""


class GpureproError(Exception):
    """A problem the user can fix: bad input, a missing tool, the wrong GPU."""


class ResultExistsError(GpureproError):
    """Refusing to overwrite a raw measurement that is already on disk."""


class RawFileError(GpureproError):
    """A raw measurement or its provenance sidecar cannot be read: missing, empty, truncated, damaged."""
