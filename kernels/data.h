// Input matrices for the SGEMM benchmark: how they are generated, and the
// on-disk format shared by gen_data and sgemm (the seed study's format).
//
// Files, in DIR (default "."):
//   host_A_<N>.bin, host_B_<N>.bin  raw float32, N*N values, column-major,
//                                   no header (byte-compatible with the seed)
//   host_meta_<N>.txt               "n=<N>\nmode=<mode>\nseed=<seed>\n";
//                                   written last, so its presence means both
//                                   matrices were written completely
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

enum class DataMode {
  kRandom,  // Philox uniform in (-1, 1], seeded: the honest load for power
  kSinCos,  // the seed's A = sinf(idx), B = cosf(idx): for faithful replays
};

const char* data_mode_name(DataMode mode);
bool parse_data_mode(const char* text, DataMode* mode);

struct DataSpec {
  int n = 0;
  DataMode mode = DataMode::kRandom;
  unsigned long long seed = 0;  // used by kRandom only
};

std::string data_file_path(const std::string& dir, char which, int n);  // which: 'A' or 'B'
std::string meta_file_path(const std::string& dir, int n);

// Fills device matrices dA and dB (n*n floats each) as spec says. kRandom
// runs on the GPU (cuRAND Philox4x32-10, legacy ordering, so the values do
// not depend on the GPU model); kSinCos is computed on the host with all
// cores, bit-identical to the seed's gen_data, and copied over.
void generate_on_device(const DataSpec& spec, float* dA, float* dB, cudaStream_t stream);

// Writes the seed-format files for spec into dir, each through a ".tmp" file
// renamed into place. kRandom needs a current CUDA device; kSinCos does not.
// Existing files are replaced: the data are a pure function of spec.
void write_data_files(const std::string& dir, const DataSpec& spec);

// Outcome of looking for data files in a directory.
enum class LoadResult { kLoaded, kAbsent };

// If both host_A_<n>.bin and host_B_<n>.bin exist in dir, copies them to dA
// and dB and fills *meta from host_meta_<n>.txt (*has_meta false if absent,
// e.g. files written by the seed's gen_data). Exits with a message if only
// one exists, a size is wrong, or the sidecar disagrees with n.
LoadResult load_data_files(const std::string& dir, int n, float* dA, float* dB,
                           cudaStream_t stream, DataSpec* meta, bool* has_meta);
