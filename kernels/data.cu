#include "data.h"

#include <curand.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "common.h"

namespace {

// Files move through host memory in pieces of this many floats (64 MiB), so
// that N=25536 (2.6 GB a matrix) needs no matrix-sized host buffer.
constexpr size_t kChunk = size_t{1} << 24;

size_t matrix_elems(int n) { return static_cast<size_t>(n) * static_cast<size_t>(n); }

// Element idx of the seed's data: A[idx] = sinf((float)idx), B = cosf, with
// idx = i + j*N the column-major index (the seed's float(i + j*nr_rows) in
// size_t arithmetic). std::sin(float) is glibc's sinf, as in the seed.
void fill_sincos(char which, size_t begin, size_t count, float* dst) {
  auto work = [=](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      const float x = static_cast<float>(begin + i);
      dst[i] = which == 'A' ? std::sin(x) : std::cos(x);
    }
  };
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t nthreads = std::min<size_t>(hw, (count + 65535) / 65536);
  if (nthreads <= 1) {
    work(0, count);
    return;
  }
  std::vector<std::thread> pool;
  const size_t per = (count + nthreads - 1) / nthreads;
  for (size_t t = 0; t < nthreads; ++t) {
    const size_t lo = t * per, hi = std::min(count, lo + per);
    if (lo < hi) pool.emplace_back(work, lo, hi);
  }
  for (auto& th : pool) th.join();
}

// Maps cuRAND's (0, 1] to (-1, 1]: signed operands toggle the sign bits too,
// and products cancel, as in real workloads.
__global__ void to_symmetric_kernel(float* x, size_t count) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    x[i] = 2.0f * x[i] - 1.0f;
}

void to_symmetric(float* x, size_t count, cudaStream_t stream) {
  to_symmetric_kernel<<<1024, 256, 0, stream>>>(x, count);
  CUDA_CHECK_LAUNCH();
}

void generate_random_on_device(unsigned long long seed, float* dA, float* dB, size_t count,
                               cudaStream_t stream) {
  curandGenerator_t gen;
  CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  CURAND_CHECK(curandSetStream(gen, stream));
  CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
  CURAND_CHECK(curandSetGeneratorOrdering(gen, CURAND_ORDERING_PSEUDO_LEGACY));
  // One stream of numbers: A takes the first N*N, B the next N*N.
  CURAND_CHECK(curandGenerateUniform(gen, dA, count));
  CURAND_CHECK(curandGenerateUniform(gen, dB, count));
  CURAND_CHECK(curandDestroyGenerator(gen));
  to_symmetric(dA, count, stream);
  to_symmetric(dB, count, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

// A pinned host buffer of kChunk floats for host<->device copies.
struct PinnedChunk {
  float* p = nullptr;
  PinnedChunk() { CUDA_CHECK(cudaMallocHost(&p, kChunk * sizeof(float))); }
  ~PinnedChunk() { CUDA_CHECK(cudaFreeHost(p)); }
  PinnedChunk(const PinnedChunk&) = delete;
  PinnedChunk& operator=(const PinnedChunk&) = delete;
};

bool file_size(const std::string& path, long long* size) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  *size = static_cast<long long>(st.st_size);
  return true;
}

// Streams one matrix into path through path.tmp; fill(begin, count, buf)
// provides elements [begin, begin + count).
template <class Fill>
void write_matrix_file(const std::string& path, size_t elems, float* buf, Fill fill) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) fail(kExitRuntime, "cannot open %s for writing: %s", tmp.c_str(), std::strerror(errno));
  for (size_t begin = 0; begin < elems; begin += kChunk) {
    const size_t count = std::min(kChunk, elems - begin);
    fill(begin, count, buf);
    if (std::fwrite(buf, sizeof(float), count, f) != count)
      fail(kExitRuntime, "write to %s failed: %s", tmp.c_str(), std::strerror(errno));
  }
  if (std::fclose(f) != 0) fail(kExitRuntime, "closing %s failed: %s", tmp.c_str(), std::strerror(errno));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail(kExitRuntime, "rename %s -> %s failed: %s", tmp.c_str(), path.c_str(), std::strerror(errno));
}

void read_matrix_file(const std::string& path, size_t elems, float* dst, float* buf,
                      cudaStream_t stream) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(kExitRuntime, "cannot open %s: %s", path.c_str(), std::strerror(errno));
  for (size_t begin = 0; begin < elems; begin += kChunk) {
    const size_t count = std::min(kChunk, elems - begin);
    if (std::fread(buf, sizeof(float), count, f) != count)
      fail(kExitRuntime, "short read from %s", path.c_str());
    CUDA_CHECK(cudaMemcpyAsync(dst + begin, buf, count * sizeof(float), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));  // buf is reused by the next piece
  }
  if (std::fclose(f) != 0) fail(kExitRuntime, "closing %s failed", path.c_str());
}

bool read_meta(const std::string& path, DataSpec* meta) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  bool has_n = false, has_mode = false, has_seed = false;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    long long n = 0;
    if (key == "n" && parse_i64(value.c_str(), 1, 1 << 30, &n)) {
      meta->n = static_cast<int>(n);
      has_n = true;
    } else if (key == "mode") {
      has_mode = parse_data_mode(value.c_str(), &meta->mode);
    } else if (key == "seed") {
      has_seed = parse_u64(value.c_str(), &meta->seed);
    }
  }
  if (!(has_n && has_mode && has_seed)) fail(kExitRuntime, "malformed data sidecar %s", path.c_str());
  return true;
}

}  // namespace

const char* data_mode_name(DataMode mode) {
  return mode == DataMode::kRandom ? "random" : "sincos";
}

bool parse_data_mode(const char* text, DataMode* mode) {
  if (std::strcmp(text, "random") == 0) {
    *mode = DataMode::kRandom;
  } else if (std::strcmp(text, "sincos") == 0) {
    *mode = DataMode::kSinCos;
  } else {
    return false;
  }
  return true;
}

std::string data_file_path(const std::string& dir, char which, int n) {
  return dir + "/host_" + which + "_" + std::to_string(n) + ".bin";
}

std::string meta_file_path(const std::string& dir, int n) {
  return dir + "/host_meta_" + std::to_string(n) + ".txt";
}

void generate_on_device(const DataSpec& spec, float* dA, float* dB, cudaStream_t stream) {
  const size_t elems = matrix_elems(spec.n);
  if (spec.mode == DataMode::kRandom) {
    generate_random_on_device(spec.seed, dA, dB, elems, stream);
    return;
  }
  PinnedChunk buf;
  for (char which : {'A', 'B'}) {
    float* dst = which == 'A' ? dA : dB;
    for (size_t begin = 0; begin < elems; begin += kChunk) {
      const size_t count = std::min(kChunk, elems - begin);
      fill_sincos(which, begin, count, buf.p);
      CUDA_CHECK(cudaMemcpyAsync(dst + begin, buf.p, count * sizeof(float), cudaMemcpyHostToDevice, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));  // buf is refilled next
    }
  }
}

void write_data_files(const std::string& dir, const DataSpec& spec) {
  const size_t elems = matrix_elems(spec.n);
  if (spec.mode == DataMode::kSinCos) {
    // Host only: no CUDA call, so this path runs on machines without a GPU.
    std::vector<float> buf(std::min(kChunk, elems));
    for (char which : {'A', 'B'})
      write_matrix_file(data_file_path(dir, which, spec.n), elems, buf.data(),
                        [which](size_t begin, size_t count, float* out) {
                          fill_sincos(which, begin, count, out);
                        });
  } else {
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *dA = nullptr, *dB = nullptr;
    CUDA_CHECK(cudaMalloc(&dA, elems * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dB, elems * sizeof(float)));
    generate_random_on_device(spec.seed, dA, dB, elems, stream);
    {
      PinnedChunk buf;
      for (char which : {'A', 'B'}) {
        const float* src = which == 'A' ? dA : dB;
        write_matrix_file(data_file_path(dir, which, spec.n), elems, buf.p,
                          [&](size_t begin, size_t count, float* out) {
                            CUDA_CHECK(cudaMemcpyAsync(out, src + begin, count * sizeof(float),
                                                       cudaMemcpyDeviceToHost, stream));
                            CUDA_CHECK(cudaStreamSynchronize(stream));
                          });
      }
    }
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaStreamDestroy(stream));
  }
  const std::string meta = meta_file_path(dir, spec.n), tmp = meta + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) fail(kExitRuntime, "cannot open %s for writing: %s", tmp.c_str(), std::strerror(errno));
  std::fprintf(f, "n=%d\nmode=%s\nseed=%llu\n", spec.n, data_mode_name(spec.mode), spec.seed);
  if (std::fclose(f) != 0) fail(kExitRuntime, "closing %s failed", tmp.c_str());
  if (std::rename(tmp.c_str(), meta.c_str()) != 0)
    fail(kExitRuntime, "rename %s -> %s failed: %s", tmp.c_str(), meta.c_str(), std::strerror(errno));
}

LoadResult load_data_files(const std::string& dir, int n, float* dA, float* dB,
                           cudaStream_t stream, DataSpec* meta, bool* has_meta) {
  const std::string pa = data_file_path(dir, 'A', n), pb = data_file_path(dir, 'B', n);
  long long sa = 0, sb = 0;
  const bool ha = file_size(pa, &sa), hb = file_size(pb, &sb);
  if (!ha && !hb) return LoadResult::kAbsent;
  if (ha != hb) fail(kExitUsage, "found %s but not %s", (ha ? pa : pb).c_str(), (ha ? pb : pa).c_str());
  const long long want = static_cast<long long>(matrix_elems(n) * sizeof(float));
  if (sa != want || sb != want)
    fail(kExitUsage, "data files %s / %s are not %lld bytes (N=%d float32)", pa.c_str(), pb.c_str(),
         want, n);
  *has_meta = read_meta(meta_file_path(dir, n), meta);
  if (*has_meta && meta->n != n)
    fail(kExitUsage, "%s says n=%d, expected %d", meta_file_path(dir, n).c_str(), meta->n, n);
  PinnedChunk buf;
  read_matrix_file(pa, matrix_elems(n), dA, buf.p, stream);
  read_matrix_file(pb, matrix_elems(n), dB, buf.p, stream);
  return LoadResult::kLoaded;
}
