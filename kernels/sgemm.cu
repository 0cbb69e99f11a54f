// sgemm: times C = A * B (N x N, FP32, column-major) on one GPU, rep by rep,
// with cuBLAS and/or our tiled kernel, verifies the product, and writes one
// CSV row per rep. Keeps the seed study's interface: sgemm <N> <reps> <gpu>.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common.h"
#include "data.h"
#include "tiled_sgemm.h"
#include "verify.h"

namespace {

constexpr int kVerifySamples = 1024;  // entries of each product checked in fp64

const char kUsage[] =
    "Usage: sgemm [options] <N> <reps> <gpu>\n"
    "\n"
    "Computes C = A * B for N x N FP32 matrices (column-major) <reps> times on CUDA\n"
    "device <gpu> (an index among the devices CUDA_VISIBLE_DEVICES leaves visible)\n"
    "and writes one CSV row per rep:\n"
    "  impl,n,rep,ms,tflops,gpu_index,gpu_uuid,t_start_unix_s,t_end_unix_s,verify_rel_err\n"
    "ms is CUDA-event time of the product; t_start/t_end are host CLOCK_REALTIME\n"
    "seconds taken around it after synchronising, for aligning telemetry samples.\n"
    "\n"
    "Data: if DIR/host_A_<N>.bin and DIR/host_B_<N>.bin exist (written by gen_data,\n"
    "or by the seed's gen_data), they are loaded. Otherwise the matrices are made on\n"
    "the GPU as --mode/--seed say and nothing is written to disk; gen_data with the\n"
    "same options writes the same values.\n"
    "\n"
    "Options:\n"
    "  --impl cublas|tiled|both  cublas: cublasSgemm with CUBLAS_DEFAULT_MATH (FP32,\n"
    "                            no TF32 tensor cores); tiled: our kernel; both: the\n"
    "                            two alternate rep by rep. Default: cublas\n"
    "  --out FILE                write the CSV to FILE (through FILE.tmp, renamed at\n"
    "                            the end); refuses an existing FILE. Default: stdout\n"
    "  --data-dir DIR            where to look for the data files. Default: .\n"
    "  --warmup K                untimed products per implementation before rep 0.\n"
    "                            Default: 2\n"
    "  --mode random|sincos      generated data: random = uniform in (-1, 1] from\n"
    "                            cuRAND Philox (default); sincos = the seed's\n"
    "                            A[i] = sinf(i), B[i] = cosf(i), for faithful replays\n"
    "  --seed S                  seed of the random data and of the verified\n"
    "                            sample positions. Default: 1\n"
    "  --tile NAME               tiled kernel configuration (default: the fastest\n"
    "                            measured on the device's architecture), one of:\n"
    "                            %s\n"
    "  --save-c PREFIX           also write each product (after the last rep) to\n"
    "                            PREFIX_<impl>.bin, raw float32 column-major\n"
    "  -h, --help                this text\n"
    "\n"
    "Verification (every run, after the timed reps): the tiled product against\n"
    "cuBLAS over all N*N entries, and each product at %d entries against fp64 dot\n"
    "products, by relative Frobenius error; the limit is 10 * 2^-24 * sqrt(N).\n"
    "verify_rel_err is the first for tiled rows and the second for cublas rows.\n"
    "\n"
    "Exit status: 0 success; 1 CUDA or I/O error; 2 bad usage or refused overwrite;\n"
    "3 verification failed (no CSV is written then).\n";

std::string tile_names() {
  int count = 0;
  const TiledConfig* configs = tiled_configs(&count);
  std::string names;
  for (int i = 0; i < count; ++i) names += std::string(i ? ", " : "") + configs[i].name;
  return names;
}

void print_usage(FILE* f) { std::fprintf(f, kUsage, tile_names().c_str(), kVerifySamples); }

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "sgemm: %s\n(run sgemm --help for usage)\n", msg.c_str());
  std::exit(kExitUsage);
}

struct Options {
  int n = 0, reps = 0, gpu = 0, warmup = 2;
  bool run_cublas = true, run_tiled = false;
  std::string out, data_dir = ".", tile, save_c;
  DataSpec spec;  // mode and seed for generated data
  bool mode_given = false, seed_given = false;
};

Options parse_args(int argc, char** argv) {
  Options o;
  o.spec.seed = 1;
  const CommandLine cl = split_command_line(argc, argv, usage_error);
  if (cl.help) {
    print_usage(stdout);
    std::exit(kExitOk);
  }
  const std::vector<const char*>& positional = cl.positional;
  for (const auto& [arg, value] : cl.options) {
    long long v = 0;
    if (arg == "--impl") {
      if (value != "cublas" && value != "tiled" && value != "both")
        usage_error("--impl must be cublas, tiled or both, not '" + value + "'");
      o.run_cublas = value != "tiled";
      o.run_tiled = value != "cublas";
    } else if (arg == "--out") {
      if (value.empty()) usage_error("--out needs a file name");
      o.out = value;
    } else if (arg == "--data-dir") {
      if (value.empty()) usage_error("--data-dir needs a directory");
      o.data_dir = value;
    } else if (arg == "--warmup") {
      if (!parse_i64(value.c_str(), 0, 1000000, &v)) usage_error("--warmup must be an integer >= 0");
      o.warmup = static_cast<int>(v);
    } else if (arg == "--mode") {
      if (!parse_data_mode(value.c_str(), &o.spec.mode)) usage_error("--mode must be random or sincos");
      o.mode_given = true;
    } else if (arg == "--seed") {
      if (!parse_u64(value.c_str(), &o.spec.seed)) usage_error("--seed must be an unsigned integer");
      o.seed_given = true;
    } else if (arg == "--save-c") {
      if (value.empty()) usage_error("--save-c needs a file name prefix");
      o.save_c = value;
    } else if (arg == "--tile") {
      if (find_tiled_config(value) == nullptr)
        usage_error("unknown --tile '" + value + "'; known: " + tile_names());
      o.tile = value;
    } else {
      usage_error("unknown option " + arg);
    }
  }
  if (positional.size() != 3) usage_error("expected <N> <reps> <gpu>");
  long long v = 0;
  // N * N elements must fit the int indexing of cuBLAS' API and the grid.
  if (!parse_i64(positional[0], 1, 46340, &v)) usage_error("N must be an integer in [1, 46340]");
  o.n = static_cast<int>(v);
  if (!parse_i64(positional[1], 1, 100000000, &v)) usage_error("reps must be an integer >= 1");
  o.reps = static_cast<int>(v);
  if (!parse_i64(positional[2], 0, 1023, &v)) usage_error("gpu must be a device index >= 0");
  o.gpu = static_cast<int>(v);
  o.spec.n = o.n;
  return o;
}

bool path_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

void save_matrix(const std::string& path, const float* d, size_t elems) {
  std::vector<float> h(elems);
  CUDA_CHECK(cudaMemcpy(h.data(), d, elems * sizeof(float), cudaMemcpyDeviceToHost));
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) fail(kExitRuntime, "cannot open %s for writing: %s", path.c_str(), std::strerror(errno));
  if (std::fwrite(h.data(), sizeof(float), elems, f) != elems || std::fclose(f) != 0)
    fail(kExitRuntime, "writing %s failed", path.c_str());
  std::fprintf(stderr, "sgemm: wrote %s\n", path.c_str());
}

struct Row {
  const char* impl;
  int rep;
  double ms, t_start, t_end;
};

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_args(argc, argv);
  // Refuse before any work, so a long run never ends in a refused write.
  if (!opt.out.empty() && path_exists(opt.out))
    usage_error("output " + opt.out + " exists; refusing to overwrite it");

  int device_count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&device_count));
  if (opt.gpu >= device_count)
    usage_error("gpu " + std::to_string(opt.gpu) + " does not exist (" + std::to_string(device_count) +
                " visible device(s))");
  CUDA_CHECK(cudaSetDevice(opt.gpu));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, opt.gpu));
  int clock_khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, opt.gpu));
  const std::string uuid = format_gpu_uuid(prop.uuid);
  const TiledConfig& tile =
      opt.tile.empty() ? default_tiled_config(prop.major, prop.minor) : *find_tiled_config(opt.tile);
  std::fprintf(stderr, "sgemm: device %d: %s, %s, sm_%d%d, %d SMs, max SM clock %d MHz\n", opt.gpu,
               prop.name, uuid.c_str(), prop.major, prop.minor, prop.multiProcessorCount,
               clock_khz / 1000);

  const int n = opt.n;
  const size_t elems = static_cast<size_t>(n) * n, bytes = elems * sizeof(float);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *dA = nullptr, *dB = nullptr, *dC_cublas = nullptr, *dC_tiled = nullptr;
  CUDA_CHECK(cudaMalloc(&dA, bytes));
  CUDA_CHECK(cudaMalloc(&dB, bytes));
  // The tiled product is always checked against cuBLAS, so a cuBLAS product
  // exists whenever the tiled one does.
  CUDA_CHECK(cudaMalloc(&dC_cublas, bytes));
  if (opt.run_tiled) CUDA_CHECK(cudaMalloc(&dC_tiled, bytes));

  // Data: files if present, else generated on the GPU.
  DataSpec meta;
  bool has_meta = false;
  const double t_data = unix_now_s();
  if (load_data_files(opt.data_dir, n, dA, dB, stream, &meta, &has_meta) == LoadResult::kLoaded) {
    if (has_meta && ((opt.mode_given && meta.mode != opt.spec.mode) ||
                     (opt.seed_given && meta.mode == DataMode::kRandom && meta.seed != opt.spec.seed)))
      usage_error("data files in " + opt.data_dir + " were made with mode=" + data_mode_name(meta.mode) +
                  " seed=" + std::to_string(meta.seed) + ", not what --mode/--seed ask for");
    if (has_meta)
      std::fprintf(stderr, "sgemm: loaded N=%d data from %s (mode=%s seed=%llu) in %.2f s\n", n,
                   opt.data_dir.c_str(), data_mode_name(meta.mode), meta.seed, unix_now_s() - t_data);
    else
      std::fprintf(stderr, "sgemm: loaded N=%d data from %s (no sidecar: provenance unknown) in %.2f s\n",
                   n, opt.data_dir.c_str(), unix_now_s() - t_data);
  } else {
    generate_on_device(opt.spec, dA, dB, stream);
    std::fprintf(stderr, "sgemm: no data files for N=%d in %s; generated mode=%s seed=%llu in %.2f s\n", n,
                 opt.data_dir.c_str(), data_mode_name(opt.spec.mode), opt.spec.seed,
                 unix_now_s() - t_data);
  }

  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  // FP32 arithmetic throughout: no TF32 tensor-core path.
  CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  const float alpha = 1.0f, beta = 0.0f;
  auto run_cublas = [&](float* C) {
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, dA, n, dB, n, &beta, C, n));
  };
  auto run_tiled = [&]() { tile.launch(n, n, n, dA, n, dB, n, dC_tiled, n, stream); };

  // NaN everywhere first: an element a kernel never writes fails verification.
  poison_nan(dC_cublas, elems, stream);
  if (opt.run_tiled) poison_nan(dC_tiled, elems, stream);

  for (int w = 0; w < opt.warmup; ++w) {
    if (opt.run_cublas) run_cublas(dC_cublas);
    if (opt.run_tiled) run_tiled();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));

  cudaEvent_t ev_start, ev_stop;
  CUDA_CHECK(cudaEventCreate(&ev_start));
  CUDA_CHECK(cudaEventCreate(&ev_stop));
  std::vector<Row> rows;
  rows.reserve(static_cast<size_t>(opt.reps) * 2);
  const double flop = 2.0 * n * static_cast<double>(n) * n;
  const double t_reps = unix_now_s();
  for (int rep = 0; rep < opt.reps; ++rep) {
    for (int which = 0; which < 2; ++which) {  // cublas then tiled: interleaved for --impl both
      const bool is_tiled = which == 1;
      if (is_tiled ? !opt.run_tiled : !opt.run_cublas) continue;
      CUDA_CHECK(cudaStreamSynchronize(stream));
      Row row{is_tiled ? "tiled" : "cublas", rep, 0.0, unix_now_s(), 0.0};
      CUDA_CHECK(cudaEventRecord(ev_start, stream));
      if (is_tiled)
        run_tiled();
      else
        run_cublas(dC_cublas);
      CUDA_CHECK(cudaEventRecord(ev_stop, stream));
      CUDA_CHECK(cudaEventSynchronize(ev_stop));
      row.t_end = unix_now_s();
      float ms = 0.0f;
      CUDA_CHECK(cudaEventElapsedTime(&ms, ev_start, ev_stop));
      row.ms = ms;
      rows.push_back(row);
    }
    if (rep == 0 || (rep + 1) % 10 == 0 || rep + 1 == opt.reps) {
      const Row& last = rows.back();
      std::fprintf(stderr, "sgemm: rep %d/%d: %s %.3f ms (%.2f TFLOP/s), %.1f s elapsed\n", rep + 1,
                   opt.reps, last.impl, last.ms, flop / (last.ms * 1e-3) / 1e12, unix_now_s() - t_reps);
    }
  }

  // Verification of the products the last reps left in C.
  const double tol = fp32_gemm_tolerance(n);
  if (!opt.run_cublas) {
    run_cublas(dC_cublas);  // the reference for the tiled product, untimed
  }
  bool ok = true;
  auto judge = [&](const char* what, double err) {
    const bool pass = err <= tol;  // false for NaN
    ok = ok && pass;
    std::fprintf(stderr, "sgemm: verify %-34s rel_err=%.3e tol=%.3e %s\n", what, err, tol,
                 pass ? "PASS" : "FAIL");
    return err;
  };
  const double err_cublas =
      judge("cublas vs fp64 (sampled)", sampled_fp64_error(dA, dB, dC_cublas, n, kVerifySamples, opt.spec.seed, stream));
  double err_tiled = 0.0;
  if (opt.run_tiled) {
    judge("tiled vs fp64 (sampled)", sampled_fp64_error(dA, dB, dC_tiled, n, kVerifySamples, opt.spec.seed, stream));
    err_tiled = judge("tiled vs cublas (all entries)", rel_frobenius_error(dC_tiled, dC_cublas, elems, stream));
  }

  if (!opt.save_c.empty()) {  // before the verdict, so failed products can be inspected too
    if (opt.run_cublas) save_matrix(opt.save_c + "_cublas.bin", dC_cublas, elems);
    if (opt.run_tiled) save_matrix(opt.save_c + "_tiled.bin", dC_tiled, elems);
  }

  CUDA_CHECK(cudaEventDestroy(ev_start));
  CUDA_CHECK(cudaEventDestroy(ev_stop));
  CUBLAS_CHECK(cublasDestroy(handle));
  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC_cublas));
  if (dC_tiled != nullptr) CUDA_CHECK(cudaFree(dC_tiled));
  CUDA_CHECK(cudaStreamDestroy(stream));

  if (!ok) {
    std::fprintf(stderr, "sgemm: verification FAILED; no CSV written\n");
    return kExitVerify;
  }
  if (opt.run_tiled) std::fprintf(stderr, "sgemm: tiled kernel config %s\n", tile.name);

  const std::string tmp = opt.out + ".tmp";
  FILE* f = opt.out.empty() ? stdout : std::fopen(tmp.c_str(), "w");
  if (f == nullptr) fail(kExitRuntime, "cannot open %s for writing: %s", tmp.c_str(), std::strerror(errno));
  std::fprintf(f, "impl,n,rep,ms,tflops,gpu_index,gpu_uuid,t_start_unix_s,t_end_unix_s,verify_rel_err\n");
  for (const Row& r : rows) {
    const bool is_tiled = std::strcmp(r.impl, "tiled") == 0;
    std::fprintf(f, "%s,%d,%d,%.6f,%.4f,%d,%s,%.6f,%.6f,%.3e\n", r.impl, n, r.rep, r.ms,
                 flop / (r.ms * 1e-3) / 1e12, opt.gpu, uuid.c_str(), r.t_start, r.t_end,
                 is_tiled ? err_tiled : err_cublas);
  }
  if (opt.out.empty()) {
    if (std::fflush(stdout) != 0) fail(kExitRuntime, "writing the CSV to stdout failed");
    return kExitOk;
  }
  if (std::fclose(f) != 0) fail(kExitRuntime, "closing %s failed: %s", tmp.c_str(), std::strerror(errno));
  if (path_exists(opt.out)) fail(kExitUsage, "output %s appeared during the run; left %s", opt.out.c_str(), tmp.c_str());
  if (std::rename(tmp.c_str(), opt.out.c_str()) != 0)
    fail(kExitRuntime, "rename %s -> %s failed: %s", tmp.c_str(), opt.out.c_str(), std::strerror(errno));
  std::fprintf(stderr, "sgemm: wrote %zu rows to %s\n", rows.size(), opt.out.c_str());
  return kExitOk;
}
