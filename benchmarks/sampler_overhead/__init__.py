"""The parts of benchmarks/telemetry_overhead.py, by job: the workloads it times (workloads.py), timing a
block of them (blocks.py), a row of off/on block pairs under each kind of sampler (rows.py), the garbage
collector kept out of a row (collector.py), the per-pair ratios and their verdict (estimate.py), and the
printed table (table.py). benchmarks/ is no package: the script imports these from beside it."""
