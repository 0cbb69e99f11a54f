// Hand-written FP32 SGEMM (SIMT, no tensor cores): C = A * B, all column-major
// (cuBLAS CUBLAS_OP_N, CUBLAS_OP_N, alpha = 1, beta = 0), any M, N, K >= 1.
#pragma once

#include <cuda_runtime.h>

#include <string>

// One compiled configuration of the kernel, named
// "BMxBNxBK_wWMxWN_tTMxTN_sS[_f1]": block tile and K step, warp tile, outputs
// per thread, shared-memory stages (s2: tiles pass through registers; s3 and
// deeper: cp.async, asynchronous from sm_80) and, with _f1, one fragment
// buffer instead of two (fewer registers, more blocks per SM).
struct TiledConfig {
  const char* name;
  void (*launch)(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C,
                 int ldc, cudaStream_t stream);
};

// All compiled configurations.
const TiledConfig* tiled_configs(int* count);

// The configuration fastest on this compute capability in our measurements
// (kernels/NOTES.md).
const TiledConfig& default_tiled_config(int cc_major, int cc_minor);

// nullptr if no configuration has this name.
const TiledConfig* find_tiled_config(const std::string& name);
