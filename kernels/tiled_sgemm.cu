// Tiled FP32 SGEMM, C = A * B, column-major (the cuBLAS "NN" case).
//
// Design (the classic SIMT GEMM of CUTLASS's SIMT path and siboehm's
// warptiled kernel, written anew here):
//  * Block tile BM x BN, stepping through K by BK. A's tile (BM x BK) is
//    contiguous along M in global memory and is stored as As[k][m]; B's tile
//    (BK x BN) is contiguous along K and is transposed on its way into shared
//    memory, Bs[k][n], so that both operands are read along M and N with
//    16-byte loads in the inner loop.
//  * Two pipelines from global to shared memory:
//    - registers (2 stages, any GPU): while the block computes on one shared
//      memory stage, each thread holds the next K tile in registers (16-byte
//      global loads) and writes it to the other stage at the end of the
//      tile, so one __syncthreads per K tile suffices;
//    - cp.async (S >= 3 stages, sm_80+): tiles t+1 .. t+S-1 are in flight
//      straight into shared memory while tile t is computed, with no staging
//      registers. A moves in 16-byte copies; B in 4-byte copies, which is
//      what lets the copy itself transpose B. (Before sm_80 the copies are
//      plain loads and stores.)
//  * Inside a tile, either the operand fragments for step k+1 are loaded
//    from shared memory while step k's FMAs run (two fragment buffers), or
//    (one buffer, lean_step) the thread keeps fewer registers so that three
//    blocks, 12 warps, share an SM and hide each other's loads. On the H200
//    the latter is the fastest: with 255 registers a thread, only 2 warps per
//    scheduler remain, too few to hide their stalls (kernels/NOTES.md).
//  * Warp tiling: a warp owns a WM x WN sub-tile; its lanes form an LM x LN
//    grid and each lane owns TM x TN outputs, as (TM/4) x (TN/4) blocks of
//    4 x 4 strided LM*4 (resp. LN*4) apart. Lanes that share rows read the
//    same shared-memory words (broadcast, no bank conflicts); each output
//    row of 4 floats leaves as one 16-byte store, and the LM lanes of a
//    column write 128 contiguous bytes.
//  * Any size: the tail K tile and the edge blocks load zeros outside the
//    matrix (zeros add nothing) and store only inside it. 16-byte accesses
//    need M, K and the leading dimensions divisible by 4 and aligned
//    pointers; otherwise the kVec=false instance uses 4-byte accesses.
//  * Blocks are rasterised in groups of kGroupM block rows, so that the
//    blocks resident at one time share A and B panels in L2.
#include "tiled_sgemm.h"

#include <cstdint>
#include <type_traits>

#include "common.h"

namespace {

constexpr int kGroupM = 16;

enum class Pipe { kRegisters, kCpAsync };

template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, Pipe Pipe_, int Stages_,
          int MinBlocks_, int FragBufs_ = 2>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;  // block tile and K step
  static constexpr int WM = WM_, WN = WN_;            // warp tile
  static constexpr int TM = TM_, TN = TN_;            // outputs per thread
  static constexpr Pipe kPipe = Pipe_;
  static constexpr int kStages = Stages_;        // shared-memory stages
  static constexpr int kMinBlocks = MinBlocks_;  // blocks per SM the registers must allow
  // 2: fragments of step k+1 load while step k computes; 1: lean_step, with
  // fewer fragment registers, leaving room for more resident warps.
  static constexpr int kFragBufs = FragBufs_;
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int LM = WM / TM, LN = WN / TN;  // lane grid inside a warp
  static constexpr int RM = TM / 4, RN = TN / 4;    // 4x4 blocks per thread
  static constexpr int kAStride = BM;               // As[k][m]: 16-byte stores, no conflicts
  // Bs[k][n] is written by lanes that differ in k: a row stride of 4 (mod 32)
  // words spreads rows k and k+4 (registers) or k = 0..7 (cp.async) across
  // distinct banks.
  static constexpr int kBStride = BN + 4;
  static constexpr int kALoads = BM * BK / 4 / kThreads;  // float4s of A per thread per K tile
  static constexpr int kBLoads = BN * BK / 4 / kThreads;  // float4s of B per thread per K tile
  static constexpr int kSmemBytes = kStages * BK * (kAStride + kBStride) * 4;

  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must cover the block tile");
  static_assert(WM % TM == 0 && WN % TN == 0 && LM * LN == 32, "lanes must cover the warp tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4x4 blocks");
  static_assert(LM % 2 == 0 && LN % 2 == 0, "paired lanes need an even lane grid");
  static_assert(kFragBufs == 2 || (kFragBufs == 1 && kPipe == Pipe::kCpAsync), "fragment buffers");
  static_assert(BK % 4 == 0, "K step: whole float4s (and even, for the fragment ping-pong)");
  static_assert(kALoads * kThreads * 4 == BM * BK && kBLoads * kThreads * 4 == BN * BK,
                "every thread loads the same number of float4s");
  static_assert(kThreads % BK == 0, "cp.async B copies: each thread keeps one k row");
  static_assert(kPipe == Pipe::kCpAsync ? kStages >= 3 : kStages == 2, "stages of the pipeline");
  static_assert(kPipe == Pipe::kCpAsync || kSmemBytes <= 48 * 1024, "static shared memory limit");
};

// ---------------------------------------------------------------- shared pieces

__device__ __forceinline__ float4 zero4() { return make_float4(0.f, 0.f, 0.f, 0.f); }

__device__ __forceinline__ float& at(float4& v, int i) { return reinterpret_cast<float*>(&v)[i]; }

struct Origin {
  int m0, n0;    // the block's first row and column of C
  int wm0, wn0;  // this thread's first fragment row and column inside the block tile
};

// Grouped rasterisation of the 1-D grid into block tiles, and this thread's
// place in its warp tile.
template <class T>
__device__ __forceinline__ Origin origin(int M, int N) {
  const int grid_m = (M + T::BM - 1) / T::BM, grid_n = (N + T::BN - 1) / T::BN;
  const int span = kGroupM * grid_n;
  const int first_m = (static_cast<int>(blockIdx.x) / span) * kGroupM;
  const int rows = min(grid_m - first_m, kGroupM);
  const int in_group = static_cast<int>(blockIdx.x) % span;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Lane bit 1 never changes lane_m and bit 0 never changes lane_n, so in
  // every A fragment load lanes T and T^2, and in every B load lanes T and
  // T^1, read the same address: the pattern under which the hardware can
  // return an LDS.128 in 2 passes instead of 4 (shared memory returns 128
  // bytes per clock). Worth about 0.5% on the H200.
  const int rest = lane >> 2;
  const int lane_m = (lane & 1) | ((rest % (T::LM / 2)) << 1);
  const int lane_n = ((lane >> 1) & 1) | ((rest / (T::LM / 2)) << 1);
  return {(first_m + in_group % rows) * T::BM, (in_group / rows) * T::BN,
          (warp % T::kWarpsM) * T::WM + lane_m * 4, (warp / T::kWarpsM) * T::WN + lane_n * 4};
}

// Fragments of step kk: As_k = &As[stage][kk][0], Bs_k = &Bs[stage][kk][0].
template <class T>
__device__ __forceinline__ void load_frag(float (&a)[T::TM], float (&b)[T::TN], const float* As_k,
                                          const float* Bs_k, const Origin& o) {
#pragma unroll
  for (int r = 0; r < T::RM; ++r)
    *reinterpret_cast<float4*>(&a[4 * r]) = *reinterpret_cast<const float4*>(&As_k[o.wm0 + r * T::LM * 4]);
#pragma unroll
  for (int r = 0; r < T::RN; ++r)
    *reinterpret_cast<float4*>(&b[4 * r]) = *reinterpret_cast<const float4*>(&Bs_k[o.wn0 + r * T::LN * 4]);
}

// One K step with a single fragment buffer (kFragBufs == 1): all of A's
// fragment, then B's in two halves, so that only TM + TN/2 fragment
// registers are live and more warps fit on an SM to hide the loads.
template <class T>
__device__ __forceinline__ void lean_step(float (&acc)[T::TM][T::TN], const float* As_k, const float* Bs_k,
                                          const Origin& o) {
  constexpr int kHalf = T::TN / 2;
  static_assert(T::RN % 2 == 0, "B's fragment splits into two halves of whole float4s");
  float a[T::TM], b[kHalf];
#pragma unroll
  for (int r = 0; r < T::RM; ++r)
    *reinterpret_cast<float4*>(&a[4 * r]) = *reinterpret_cast<const float4*>(&As_k[o.wm0 + r * T::LM * 4]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int r = 0; r < T::RN / 2; ++r)
      *reinterpret_cast<float4*>(&b[4 * r]) =
          *reinterpret_cast<const float4*>(&Bs_k[o.wn0 + (h * T::RN / 2 + r) * T::LN * 4]);
#pragma unroll
    for (int i = 0; i < T::TM; ++i)
#pragma unroll
      for (int j = 0; j < kHalf; ++j) acc[i][h * kHalf + j] = fmaf(a[i], b[j], acc[i][h * kHalf + j]);
  }
}

template <class T>
__device__ __forceinline__ void fma_step(float (&acc)[T::TM][T::TN], const float (&a)[T::TM],
                                         const float (&b)[T::TN]) {
#pragma unroll
  for (int i = 0; i < T::TM; ++i)
#pragma unroll
    for (int j = 0; j < T::TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// Column n of this thread's 4x4 block (rm, rn) is 4 contiguous floats of C.
template <class T, bool kVec>
__device__ __forceinline__ void store_c(const float (&acc)[T::TM][T::TN], float* __restrict__ C, int ldc,
                                        int M, int N, const Origin& o) {
#pragma unroll
  for (int rm = 0; rm < T::RM; ++rm) {
    const int m = o.m0 + o.wm0 + rm * T::LM * 4;
#pragma unroll
    for (int rn = 0; rn < T::RN; ++rn) {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int n = o.n0 + o.wn0 + rn * T::LN * 4 + jj;
        const int j = 4 * rn + jj;
        if (n >= N) continue;
        float* c = C + m + static_cast<int64_t>(n) * ldc;
        if constexpr (kVec) {
          if (m < M)
            *reinterpret_cast<float4*>(c) =
                make_float4(acc[4 * rm][j], acc[4 * rm + 1][j], acc[4 * rm + 2][j], acc[4 * rm + 3][j]);
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i)
            if (m + i < M) c[i] = acc[4 * rm + i][j];
        }
      }
    }
  }
}

// ---------------------------------------------------------------- register pipeline

template <class T, bool kVec>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
sgemm_nn_registers(int M, int N, int K, const float* __restrict__ A, int lda,
                   const float* __restrict__ B, int ldb, float* __restrict__ C, int ldc) {
  __shared__ __align__(16) float As[2][T::BK][T::kAStride];
  __shared__ __align__(16) float Bs[2][T::BK][T::kBStride];
  const Origin o = origin<T>(M, N);
  const int tid = threadIdx.x;

  // A: float4 q -> (m = 4*(q % (BM/4)), k = q / (BM/4)), so a warp reads 512
  // contiguous bytes of one column. B: q -> (k = 4*(q % (BK/4)), n = q / (BK/4)),
  // so a warp reads whole 32-byte sectors of BK contiguous floats.
  const float* a_ptr[T::kALoads];
  int a_m[T::kALoads], a_k[T::kALoads];
  const float* b_ptr[T::kBLoads];
  int b_n[T::kBLoads], b_k[T::kBLoads];
#pragma unroll
  for (int l = 0; l < T::kALoads; ++l) {
    const int q = tid + l * T::kThreads;
    a_m[l] = 4 * (q % (T::BM / 4));
    a_k[l] = q / (T::BM / 4);
    a_ptr[l] = A + (o.m0 + a_m[l]) + static_cast<int64_t>(a_k[l]) * lda;
  }
#pragma unroll
  for (int l = 0; l < T::kBLoads; ++l) {
    const int q = tid + l * T::kThreads;
    b_k[l] = 4 * (q % (T::BK / 4));
    b_n[l] = q / (T::BK / 4);
    b_ptr[l] = B + b_k[l] + static_cast<int64_t>(o.n0 + b_n[l]) * ldb;
  }

  float4 a_stage[T::kALoads], b_stage[T::kBLoads];

  // Loads the K tile at k0 into a_stage/b_stage; kCheckK only for the last, partial tile.
  auto load_tile = [&](int k0, auto check_k) {
    constexpr bool kCheckK = decltype(check_k)::value;
#pragma unroll
    for (int l = 0; l < T::kALoads; ++l) {
      const int m = o.m0 + a_m[l];
      const bool k_ok = !kCheckK || k0 + a_k[l] < K;
      if constexpr (kVec) {
        a_stage[l] = (m < M && k_ok) ? *reinterpret_cast<const float4*>(a_ptr[l]) : zero4();
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) at(a_stage[l], i) = (m + i < M && k_ok) ? a_ptr[l][i] : 0.f;
      }
    }
#pragma unroll
    for (int l = 0; l < T::kBLoads; ++l) {
      const bool n_ok = o.n0 + b_n[l] < N;
      if constexpr (kVec) {
        const bool k_ok = !kCheckK || k0 + b_k[l] < K;  // K % 4 == 0: the float4 is all in or out
        b_stage[l] = (n_ok && k_ok) ? *reinterpret_cast<const float4*>(b_ptr[l]) : zero4();
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          at(b_stage[l], i) = (n_ok && (!kCheckK || k0 + b_k[l] + i < K)) ? b_ptr[l][i] : 0.f;
      }
    }
#pragma unroll
    for (int l = 0; l < T::kALoads; ++l) a_ptr[l] += static_cast<int64_t>(T::BK) * lda;
#pragma unroll
    for (int l = 0; l < T::kBLoads; ++l) b_ptr[l] += T::BK;
  };
  auto load_tile_at = [&](int k0) {
    if (K - k0 >= T::BK)
      load_tile(k0, std::false_type{});
    else
      load_tile(k0, std::true_type{});
  };
  auto store_tile = [&](int stage) {
#pragma unroll
    for (int l = 0; l < T::kALoads; ++l)
      *reinterpret_cast<float4*>(&As[stage][a_k[l]][a_m[l]]) = a_stage[l];
#pragma unroll
    for (int l = 0; l < T::kBLoads; ++l)
#pragma unroll
      for (int i = 0; i < 4; ++i) Bs[stage][b_k[l] + i][b_n[l]] = at(b_stage[l], i);
  };

  float a_frag[2][T::TM], b_frag[2][T::TN];
  float acc[T::TM][T::TN] = {};

  const int num_tiles = (K + T::BK - 1) / T::BK;
  load_tile_at(0);
  store_tile(0);
  __syncthreads();
  load_frag<T>(a_frag[0], b_frag[0], As[0][0], Bs[0][0], o);

  int stage = 0;
  for (int t = 0; t < num_tiles; ++t) {
    const bool has_next = t + 1 < num_tiles;
    if (has_next) load_tile_at((t + 1) * T::BK);  // in flight during this tile's FMAs
#pragma unroll
    for (int kk = 0; kk < T::BK; ++kk) {
      if (kk == T::BK - 1 && has_next) {
        // Every thread passed the previous tile's barrier, so nobody still
        // reads stage^1; the barrier below publishes it.
        store_tile(stage ^ 1);
        __syncthreads();
        stage ^= 1;
      }
      if (kk < T::BK - 1)
        load_frag<T>(a_frag[(kk + 1) % 2], b_frag[(kk + 1) % 2], As[stage][kk + 1], Bs[stage][kk + 1], o);
      else if (has_next)
        load_frag<T>(a_frag[0], b_frag[0], As[stage][0], Bs[stage][0], o);
      fma_step<T>(acc, a_frag[kk % 2], b_frag[kk % 2]);
    }
  }
  store_c<T, kVec>(acc, C, ldc, M, N, o);
}

// ---------------------------------------------------------------- cp.async pipeline

// Copies kBytes (4 or 16) from global to shared memory asynchronously; if
// !pred, writes zeros and reads nothing (src-size 0), so src may point
// outside the matrix then. Before sm_80, which has no cp.async, an ordinary
// load and store: the same results, without the overlap.
template <int kBytes>
__device__ __forceinline__ void cp_async(unsigned smem_dst, const float* gmem_src, bool pred) {
#if __CUDA_ARCH__ >= 800
  if constexpr (kBytes == 16)  // .cg: A is streamed through L2 only
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_dst), "l"(gmem_src),
                 "r"(pred ? 16 : 0));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_dst), "l"(gmem_src),
                 "r"(pred ? 4 : 0));
#else
  void* dst = __cvta_shared_to_generic(smem_dst);
  if constexpr (kBytes == 16)
    *static_cast<float4*>(dst) = pred ? *reinterpret_cast<const float4*>(gmem_src) : zero4();
  else
    *static_cast<float*>(dst) = pred ? *gmem_src : 0.f;
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most kPending of this thread's copy groups are in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

template <class T, bool kVec>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
sgemm_nn_cp_async(int M, int N, int K, const float* __restrict__ A, int lda,
                  const float* __restrict__ B, int ldb, float* __restrict__ C, int ldc) {
  extern __shared__ __align__(16) float smem[];
  constexpr int kAStage = T::BK * T::kAStride, kBStage = T::BK * T::kBStride;
  const float* As = smem;                         // [kStages][BK][kAStride]
  const float* Bs = smem + T::kStages * kAStage;  // [kStages][BK][kBStride]
  const unsigned smem_u32 = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const Origin o = origin<T>(M, N);
  const int tid = threadIdx.x;

  // Copy assignment, fixed for the whole K loop, so that issuing a tile is
  // little more than the copies themselves. A: float4 (m = 4*(tid % (BM/4)),
  // k = tid / (BM/4) + l*kARows), a warp reading 512 contiguous bytes of a
  // column. B: float (k = tid % BK, n = tid / BK + l*kBCols): 8 lanes read
  // one 32-byte sector of a column and write one k row each.
  static_assert(T::kThreads % (T::BM / 4) == 0, "A copies: whole rows of float4s per pass");
  constexpr int kARows = T::kThreads / (T::BM / 4), kBCols = T::kThreads / T::BK;
  const int a_m = 4 * (tid % (T::BM / 4)), a_k = tid / (T::BM / 4);
  const int a_mlim = M - (o.m0 + a_m);  // elements of this float4 inside the matrix
  const float* a_src = A + (o.m0 + a_m) + static_cast<int64_t>(a_k) * lda;
  const int64_t a_row_step = static_cast<int64_t>(kARows) * lda;
  const unsigned a_dst = 4 * (a_k * T::kAStride + a_m);
  const int b_k = tid % T::BK, b_n = tid / T::BK;
  const int b_nlim = N - (o.n0 + b_n);
  const float* b_src = B + b_k + static_cast<int64_t>(o.n0 + b_n) * ldb;
  const int64_t b_col_step = static_cast<int64_t>(kBCols) * ldb;
  const unsigned b_dst = 4 * (T::kStages * kAStage + b_k * T::kBStride + b_n);

  // Issues the copies of the next K tile (whose first k is K - k_left) into
  // `stage`; kCheckK only for the last, partial tile.
  auto issue_tile = [&](int stage, int k_left, auto check_k) {
    constexpr bool kCheckK = decltype(check_k)::value;
    const unsigned as = smem_u32 + a_dst + 4 * stage * kAStage;
#pragma unroll
    for (int l = 0; l < T::kALoads; ++l) {
      const bool k_ok = !kCheckK || a_k + l * kARows < k_left;
      const float* src = a_src + l * a_row_step;
      const unsigned dst = as + 4 * l * kARows * T::kAStride;
      if constexpr (kVec) {
        cp_async<16>(dst, src, a_mlim > 0 && k_ok);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) cp_async<4>(dst + 4 * i, src + i, i < a_mlim && k_ok);
      }
    }
    const unsigned bs = smem_u32 + b_dst + 4 * stage * kBStage;
    const bool bk_ok = !kCheckK || b_k < k_left;
#pragma unroll
    for (int l = 0; l < 4 * T::kBLoads; ++l)
      cp_async<4>(bs + 4 * l * kBCols, b_src + l * b_col_step, bk_ok && l * kBCols < b_nlim);
    a_src += static_cast<int64_t>(T::BK) * lda;
    b_src += T::BK;
  };
  auto issue_tile_at = [&](int t, int stage) {
    const int k_left = K - t * T::BK;
    if (k_left >= T::BK)
      issue_tile(stage, k_left, std::false_type{});
    else
      issue_tile(stage, k_left, std::true_type{});
  };

  float a_frag[T::kFragBufs][T::TM], b_frag[T::kFragBufs][T::TN];  // for kFragBufs == 2; lean_step has its own
  float acc[T::TM][T::TN] = {};
  const int num_tiles = (K + T::BK - 1) / T::BK;

  // Tiles 0 .. S-2 in flight; one commit group per tile (empty past the end,
  // so that the wait counts stay the same).
#pragma unroll
  for (int s = 0; s < T::kStages - 1; ++s) {
    if (s < num_tiles) issue_tile_at(s, s);
    cp_async_commit();
  }
  cp_async_wait<T::kStages - 2>();
  __syncthreads();
  if constexpr (T::kFragBufs == 2) load_frag<T>(a_frag[0], b_frag[0], As, Bs, o);

  int read_stage = 0, write_stage = T::kStages - 1;
  for (int t = 0; t < num_tiles; ++t) {
    // write_stage was read during tile t-1, and every thread has passed the
    // barrier that ended it.
    if (t + T::kStages - 1 < num_tiles) issue_tile_at(t + T::kStages - 1, write_stage);
    cp_async_commit();
    write_stage = write_stage + 1 == T::kStages ? 0 : write_stage + 1;
    const float* as = As + read_stage * kAStage;
    const float* bs = Bs + read_stage * kBStage;
    if constexpr (T::kFragBufs == 2) {
#pragma unroll
      for (int kk = 0; kk < T::BK; ++kk) {
        if (kk == T::BK - 1) {
          cp_async_wait<T::kStages - 2>();  // this thread's copies of tile t+1 landed
          __syncthreads();                  // ... and everyone else's
          read_stage = read_stage + 1 == T::kStages ? 0 : read_stage + 1;
        }
        if (kk < T::BK - 1)
          load_frag<T>(a_frag[(kk + 1) % 2], b_frag[(kk + 1) % 2], as + (kk + 1) * T::kAStride,
                       bs + (kk + 1) * T::kBStride, o);
        else if (t + 1 < num_tiles)
          load_frag<T>(a_frag[0], b_frag[0], As + read_stage * kAStage, Bs + read_stage * kBStage, o);
        fma_step<T>(acc, a_frag[kk % 2], b_frag[kk % 2]);
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < T::BK; ++kk) lean_step<T>(acc, as + kk * T::kAStride, bs + kk * T::kBStride, o);
      cp_async_wait<T::kStages - 2>();  // tile t+1 landed, from every thread
      __syncthreads();
      read_stage = read_stage + 1 == T::kStages ? 0 : read_stage + 1;
    }
  }
  store_c<T, kVec>(acc, C, ldc, M, N, o);
}

// ---------------------------------------------------------------- host side

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T, bool kVec>
constexpr auto kernel() {
  if constexpr (T::kPipe == Pipe::kCpAsync)
    return sgemm_nn_cp_async<T, kVec>;
  else
    return sgemm_nn_registers<T, kVec>;
}

template <class T>
void launch(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
            cudaStream_t stream) {
  const long long blocks = static_cast<long long>((m + T::BM - 1) / T::BM) * ((n + T::BN - 1) / T::BN);
  if (blocks > 0x7fffffffLL) fail(kExitUsage, "matrix too large for a 1-D grid (%lld blocks)", blocks);
  const bool vec = m % 4 == 0 && k % 4 == 0 && lda % 4 == 0 && ldb % 4 == 0 && ldc % 4 == 0 &&
                   aligned16(A) && aligned16(B) && aligned16(C);
  const int smem = T::kPipe == Pipe::kCpAsync ? T::kSmemBytes : 0;
  if constexpr (T::kPipe == Pipe::kCpAsync) {
    // Dynamic shared memory above 48 KB must be allowed per kernel, once
    // (this process uses one device).
    static const bool allowed = [] {
      CUDA_CHECK(cudaFuncSetAttribute(kernel<T, true>(), cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
      CUDA_CHECK(cudaFuncSetAttribute(kernel<T, false>(), cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
      return true;
    }();
    (void)allowed;
  }
  const dim3 grid(static_cast<unsigned>(blocks));
  if (vec)
    kernel<T, true>()<<<grid, T::kThreads, smem, stream>>>(m, n, k, A, lda, B, ldb, C, ldc);
  else
    kernel<T, false>()<<<grid, T::kThreads, smem, stream>>>(m, n, k, A, lda, B, ldb, C, ldc);
  CUDA_CHECK_LAUNCH();
}

// Measured on an H200 (kernels/NOTES.md): the 3-blocks-per-SM configuration
// is the fastest; the others are the fastest with a register pipeline (any
// GPU) and with double-buffered fragments.
constexpr Pipe kReg = Pipe::kRegisters, kCp = Pipe::kCpAsync;
//                          BM   BN  BK  WM  WN  TM  TN  pipe stages minBlocks fragBufs
using R256x128k8 = Tile<256, 128, 8, 64, 64, 8, 16, kReg, 2, 1>;
using C256x128k16s4 = Tile<256, 128, 16, 64, 64, 8, 16, kCp, 4, 1>;
using C128x128k16s3b3 = Tile<128, 128, 16, 64, 64, 8, 16, kCp, 3, 3, 1>;

template <class T>
constexpr TiledConfig config(const char* name) {
  return {name, launch<T>};
}

const TiledConfig kConfigs[] = {
    config<C128x128k16s3b3>("128x128x16_w64x64_t8x16_s3_f1"),
    config<R256x128k8>("256x128x8_w64x64_t8x16_s2"),
    config<C256x128k16s4>("256x128x16_w64x64_t8x16_s4"),
};

}  // namespace

const TiledConfig* tiled_configs(int* count) {
  *count = static_cast<int>(sizeof kConfigs / sizeof kConfigs[0]);
  return kConfigs;
}

const TiledConfig* find_tiled_config(const std::string& name) {
  for (const TiledConfig& c : kConfigs)
    if (name == c.name) return &c;
  return nullptr;
}

const TiledConfig& default_tiled_config(int cc_major, int cc_minor) {
  const int cc = 10 * cc_major + cc_minor;
  // cp.async (sm_80+) lets the lean 3-blocks-per-SM configuration keep its
  // loads in flight; before sm_80 the register pipeline is the better fit.
  return *find_tiled_config(cc >= 80 ? "128x128x16_w64x64_t8x16_s3_f1" : "256x128x8_w64x64_t8x16_s2");
}
