// Shared helpers for gen_data and sgemm: error checking, exit codes, clocks,
// strict number parsing.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

// Exit codes, so that a pipeline can tell a bad invocation from a broken GPU
// from a wrong product.
enum ExitCode : int {
  kExitOk = 0,
  kExitRuntime = 1,  // CUDA/cuBLAS/cuRAND/IO failure
  kExitUsage = 2,    // bad command line, refused overwrite
  kExitVerify = 3,   // the product failed verification
};

// Prints a printf-style message and a newline to stderr, then exits.
[[noreturn]] __attribute__((format(printf, 2, 3))) inline void fail(int code, const char* fmt,
                                                                    ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::exit(code);
}

inline void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s\n", file, line, cudaGetErrorName(e),
                 cudaGetErrorString(e), what);
    std::exit(kExitRuntime);
  }
}

inline void check_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s:%d: cuBLAS error %s in %s\n", file, line, cublasGetStatusString(s),
                 what);
    std::exit(kExitRuntime);
  }
}

inline const char* curand_status_name(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
  }
  return "unknown curandStatus_t";
}

inline void check_curand(curandStatus_t s, const char* what, const char* file, int line) {
  if (s != CURAND_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s:%d: cuRAND error %s in %s\n", file, line, curand_status_name(s), what);
    std::exit(kExitRuntime);
  }
}

#define CUDA_CHECK(call) check_cuda((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) check_cublas((call), #call, __FILE__, __LINE__)
#define CURAND_CHECK(call) check_curand((call), #call, __FILE__, __LINE__)
// After every kernel launch: catches bad launch configurations at once;
// faults inside the kernel surface at the next checked synchronisation.
#define CUDA_CHECK_LAUNCH() check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

// CLOCK_REALTIME as float seconds: the clock a Python telemetry sampler's
// time.time() reads, so samples can be aligned with each rep.
inline double unix_now_s() {
  timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) fail(kExitRuntime, "clock_gettime failed");
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Strict integer parsing: the whole string must be a number inside [lo, hi].
inline bool parse_i64(const char* s, long long lo, long long hi, long long* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

inline bool parse_u64(const char* s, unsigned long long* out) {
  if (s == nullptr || *s == '\0' || *s == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

// Formats cudaDeviceProp::uuid as NVML and nvidia-smi print it.
// The command line both programs share the shape of: positional arguments, and options written
// `--name value` or `--name=value`. `help` is set by -h/--help. An option missing its value is reported
// through `usage_error`, which does not return.
struct CommandLine {
  bool help = false;
  std::vector<const char*> positional;
  std::vector<std::pair<std::string, std::string>> options;  // (--name, value), in order
};

inline CommandLine split_command_line(int argc, char** argv, void (*usage_error)(const std::string&)) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      cl.help = true;
      return cl;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      cl.positional.push_back(argv[i]);
      continue;
    }
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      usage_error("option " + arg + " needs a value");
    }
    cl.options.emplace_back(arg, value);
  }
  return cl;
}

inline std::string format_gpu_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char buf[48];
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}
