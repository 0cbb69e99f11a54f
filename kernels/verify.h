// Verification of an SGEMM product C = A * B (square, column-major, n x n).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// Relative error a correct FP32 product may show against another correct
// FP32 product or against exact arithmetic, for inner dimension k:
//   tol(k) = 10 * u * sqrt(k),   u = 2^-24 (FP32 unit roundoff).
// Why: each output sums k products in FP32; rounding errors of the partial
// sums behave like a random walk, so the relative error of a whole matrix
// grows like c * u * sqrt(k) with c well under 1 for the data used here
// (uniform signed or sin/cos values, one accumulator per output as in both
// kernels). The worst-case bound k*u (1.5e-3 at k=25536) would let a TF32
// product (u = 2^-11, error ~3e-4) pass; 10*u*sqrt(k) (1.9e-5 at k=1000,
// 5.4e-5 at 8192, 9.5e-5 at 25536) keeps ~10x margin for FP32 and still
// rejects TF32 or a wrong element.
double fp32_gemm_tolerance(int k);

// ||X - Y||_F / ||Y||_F over count elements, accumulated in double on the
// GPU in a fixed order (the same value run to run). ||X - Y||_F alone if Y
// is all zero; NaN if any element is NaN.
double rel_frobenius_error(const float* X, const float* Y, size_t count, cudaStream_t stream);

// Checks `samples` entries of C (the four corners plus positions drawn from
// seed) against double-precision dot products of A's rows and B's columns,
// computed on the GPU; returns ||C_s - ref_s|| / ||ref_s|| over the sample.
double sampled_fp64_error(const float* A, const float* B, const float* C, int n, int samples,
                          unsigned long long seed, cudaStream_t stream);

// Fills C with NaN so that an element no kernel wrote fails verification.
void poison_nan(float* C, size_t count, cudaStream_t stream);
