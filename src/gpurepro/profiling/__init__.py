"""Profiling where the tools exist: Nsight Systems traces (`nsys`) and DCGM profiling metrics (`dcgm`).
Each detects its tool and says plainly when it is not there; neither ever writes a stand-in result."""
