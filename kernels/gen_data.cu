// gen_data: writes the input matrices of sgemm for size N, in the seed
// study's file format (see data.h). Keeps the seed's interface: gen_data <N>.
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common.h"
#include "data.h"

namespace {

const char kUsage[] =
    "Usage: gen_data [options] <N>\n"
    "\n"
    "Writes DIR/host_A_<N>.bin and DIR/host_B_<N>.bin (raw float32, N*N values,\n"
    "column-major: the seed study's format) and DIR/host_meta_<N>.txt (n, mode,\n"
    "seed). Each file goes through a .tmp file renamed into place; existing files\n"
    "are replaced (the values depend on N, --mode and --seed only).\n"
    "sgemm needs no files: without them it generates the same data on the GPU.\n"
    "\n"
    "Options:\n"
    "  --mode random|sincos  random: uniform in (-1, 1] from cuRAND Philox4x32-10\n"
    "                        (legacy ordering), made on GPU --gpu (default);\n"
    "                        sincos: the seed's A[i] = sinf(i), B[i] = cosf(i) with\n"
    "                        i the column-major index, made on the host (no GPU)\n"
    "  --seed S              seed of the random data. Default: 1\n"
    "  --data-dir DIR        output directory (must exist). Default: .\n"
    "  --gpu G               CUDA device for --mode random. Default: 0\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 success; 1 CUDA or I/O error; 2 bad usage.\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "gen_data: %s\n(run gen_data --help for usage)\n", msg.c_str());
  std::exit(kExitUsage);
}

}  // namespace

int main(int argc, char** argv) {
  DataSpec spec;
  spec.seed = 1;
  std::string dir = ".";
  int gpu = 0;
  const CommandLine cl = split_command_line(argc, argv, usage_error);
  if (cl.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  const std::vector<const char*>& positional = cl.positional;
  for (const auto& [arg, value] : cl.options) {
    long long v = 0;
    if (arg == "--mode") {
      if (!parse_data_mode(value.c_str(), &spec.mode)) usage_error("--mode must be random or sincos");
    } else if (arg == "--seed") {
      if (!parse_u64(value.c_str(), &spec.seed)) usage_error("--seed must be an unsigned integer");
    } else if (arg == "--data-dir") {
      if (value.empty()) usage_error("--data-dir needs a directory");
      dir = value;
    } else if (arg == "--gpu") {
      if (!parse_i64(value.c_str(), 0, 1023, &v)) usage_error("--gpu must be a device index >= 0");
      gpu = static_cast<int>(v);
    } else {
      usage_error("unknown option " + arg);
    }
  }
  if (positional.size() != 1) usage_error("expected <N>");
  long long n = 0;
  if (!parse_i64(positional[0], 1, 46340, &n)) usage_error("N must be an integer in [1, 46340]");
  spec.n = static_cast<int>(n);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) usage_error("--data-dir " + dir + " is not a directory");

  if (spec.mode == DataMode::kRandom) CUDA_CHECK(cudaSetDevice(gpu));
  const double t0 = unix_now_s();
  write_data_files(dir, spec);
  std::fprintf(stderr, "gen_data: wrote N=%d mode=%s seed=%llu to %s in %.2f s\n", spec.n,
               data_mode_name(spec.mode), spec.seed, dir.c_str(), unix_now_s() - t0);
  return kExitOk;
}
