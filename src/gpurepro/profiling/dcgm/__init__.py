"""DCGM profiling metrics (SM active, SM occupancy, tensor active, DRAM active, PCIe, framebuffer used)
sampled beside a measurement, where DCGM exists.

Two back-ends, the structured one first: DCGM's Python bindings (bindings.py), then `dcgmi dmon`
(dmon.py, its output read by dmon_parser.py). monitor.py picks the one that starts and writes the
samples (fields.py names the fields and the table); measurement.py is what a measuring job uses.
"""

from .fields import COLUMNS, FIELD_BY_ID, FIELDS, Field
from .measurement import dcgm_out_path, monitor_if_requested
from .monitor import DcgmStatus, dcgm_monitor, dcgm_status

__all__ = [
    "COLUMNS",
    "FIELDS",
    "FIELD_BY_ID",
    "DcgmStatus",
    "Field",
    "dcgm_monitor",
    "dcgm_out_path",
    "dcgm_status",
    "monitor_if_requested",
]
