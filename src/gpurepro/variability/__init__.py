"""The variability study: how much "identical" GPUs differ in SGEMM speed, power, clocks and temperature."""
