"""The SGEMM study: FP32 matrix products timed per repetition with telemetry (backends: torch for now)."""
