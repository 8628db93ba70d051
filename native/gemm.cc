// Instantiates native/gemm_kernel.inc for float and double, once portable (SSE2 on x86-64) and,
// on x86-64 with GCC, once more under an AVX2+FMA target pragma chosen at run time by CPUID.
// The whole file is built with portable flags (-O3), so it loads on any x86-64 / arm64 CPU.
#include "gemm.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#endif

namespace lever {
namespace generic_f32 {
#define REAL float
#define VEC 4
#define MR 4
#define NV 2
#include "gemm_kernel.inc"
#undef REAL
#undef VEC
#undef MR
#undef NV
}  // namespace generic_f32
namespace generic_f64 {
#define REAL double
#define VEC 2
#define MR 4
#define NV 2
#include "gemm_kernel.inc"
#undef REAL
#undef VEC
#undef MR
#undef NV
}  // namespace generic_f64

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LEVER_HAVE_AVX2_KERNELS 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2_f32 {
#define REAL float
#define VEC 8
#define MR 6
#define NV 2
#include "gemm_kernel.inc"
#undef REAL
#undef VEC
#undef MR
#undef NV
}  // namespace avx2_f32
namespace avx2_f64 {
#define REAL double
#define VEC 4
#define MR 6
#define NV 2
#include "gemm_kernel.inc"
#undef REAL
#undef VEC
#undef MR
#undef NV
}  // namespace avx2_f64
// Contiguous dot products for the few-rows Bᵀ path (one query row against K candidate rows, called
// tens of thousands of times per inference): 4×8 (float) / 4×4 (double) FMA lanes instead of the
// portable path's 4 scalar chains, which are latency-bound.
namespace avx2_dot {
float dot(const float* a, const float* b, long K) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  long k = 0;
  for (; k + 32 <= K; k += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 16), _mm256_loadu_ps(b + k + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 24), _mm256_loadu_ps(b + k + 24), s3);
  }
  for (; k + 8 <= K; k += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
  float lane[8];
  _mm256_storeu_ps(lane, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  float s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; k < K; k++) s += a[k] * b[k];
  return s;
}
double dot(const double* a, const double* b, long K) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
  long k = 0;
  for (; k + 16 <= K; k += 16) {
    s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k), _mm256_loadu_pd(b + k), s0);
    s1 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k + 4), _mm256_loadu_pd(b + k + 4), s1);
    s2 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k + 8), _mm256_loadu_pd(b + k + 8), s2);
    s3 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k + 12), _mm256_loadu_pd(b + k + 12), s3);
  }
  for (; k + 4 <= K; k += 4) s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k), _mm256_loadu_pd(b + k), s0);
  double lane[4];
  _mm256_storeu_pd(lane, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
  double s = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  for (; k < K; k++) s += a[k] * b[k];
  return s;
}
}  // namespace avx2_dot
// Screening scores for cosine search (src/pools/search.ts): C[i·ldc + j] = A_i · B_j for a few query
// rows A against many index rows B, both row-major and contiguous (A·Bᵀ). No packing: each block of 3
// index rows is read once from memory and met by every query, 4 queries at a time (12 accumulators).
// Each score is one 8-lane FMA chain over k and the same lane reduction, whichever block it falls in
// (the last index rows, fewer than 3, and a K that is not a multiple of 8 go through `dot`).
namespace avx2_nt {
inline float hsum(__m256 v) {
  float l[8];
  _mm256_storeu_ps(l, v);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
inline float dot(const float* a, const float* b, long K) {
  __m256 c = _mm256_setzero_ps();
  long k = 0;
  for (; k + 8 <= K; k += 8) c = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), c);
  float s = hsum(c);
  for (; k < K; k++) s += a[k] * b[k];
  return s;
}
void rows(long M, long j0, long j1, long K, const float* A, const float* B, float* C, long ldc) {
  long j = j0;
  const long K8 = K / 8 * 8;
  for (; j + 3 <= j1 && K8 == K; j += 3) {
    const float* b0 = B + j * K;
    const float* b1 = b0 + K;
    const float* b2 = b1 + K;
    // The last block of fewer than 4 queries repeats its last query (computed, not stored): a lone query
    // on a single FMA chain would be latency-bound, several times slower per score than a full block.
    for (long i = 0; i < M; i += 4) {
      const long live = M - i < 4 ? M - i : 4;
      const float* a[4];
      for (int q = 0; q < 4; q++) a[q] = A + (i + (q < live ? q : live - 1)) * K;
      __m256 c[3][4];
      for (int r = 0; r < 3; r++)
        for (int q = 0; q < 4; q++) c[r][q] = _mm256_setzero_ps();
      for (long k = 0; k < K; k += 8) {
        const __m256 x0 = _mm256_loadu_ps(b0 + k), x1 = _mm256_loadu_ps(b1 + k), x2 = _mm256_loadu_ps(b2 + k);
        for (int q = 0; q < 4; q++) {
          const __m256 aq = _mm256_loadu_ps(a[q] + k);
          c[0][q] = _mm256_fmadd_ps(aq, x0, c[0][q]);
          c[1][q] = _mm256_fmadd_ps(aq, x1, c[1][q]);
          c[2][q] = _mm256_fmadd_ps(aq, x2, c[2][q]);
        }
      }
      for (int q = 0; q < live; q++)
        for (int r = 0; r < 3; r++) C[(i + q) * ldc + j + r] = hsum(c[r][q]);
    }
  }
  for (; j < j1; j++)
    for (long i = 0; i < M; i++) C[i * ldc + j] = dot(A + i * K, B + j * K, K);
}
}  // namespace avx2_nt
#pragma GCC pop_options
#endif

namespace {

constexpr long kMaxThreads = 8;

bool use_avx2() {
#ifdef LEVER_HAVE_AVX2_KERNELS
  static const bool ok = [] {
    const char* env = std::getenv("LEVER_SIMD");
    if (env != nullptr && std::strcmp(env, "generic") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return ok;
#else
  return false;
#endif
}

/** Thread-local packing buffers, grown on demand, 64-byte aligned. */
struct Scratch {
  void* ptr = nullptr;
  size_t bytes = 0;
  ~Scratch() { std::free(ptr); }
  void* get(size_t want) {
    if (want > bytes) {
      std::free(ptr);
      ptr = std::aligned_alloc(64, (want + 63) / 64 * 64);
      bytes = ptr != nullptr ? want : 0;
    }
    return ptr;
  }
};

template <typename T>
void scale_c(long M, long N, T beta, T* C, long ldc) {
  if (beta == T(1)) return;
  for (long i = 0; i < M; i++) {
    T* row = C + i * ldc;
    if (beta == T(0))
      for (long j = 0; j < N; j++) row[j] = 0;
    else
      for (long j = 0; j < N; j++) row[j] *= beta;
  }
}

// A few rows of C (e.g. one query against K candidates): packing B would cost as much as the
// arithmetic, so work on the operands in place. Bᵀ rows are dot products; B rows are axpys.
template <typename T>
void gemm_few_rows(bool transA, bool transB, long M, long N, long K, T alpha, const T* A, long lda, const T* B,
                   long ldb, T* C, long ldc) {
  for (long i = 0; i < M; i++) {
    T* c = C + i * ldc;
    const long sa = transA ? lda : 1;
    const T* a = transA ? A + i : A + i * lda;
#ifdef LEVER_HAVE_AVX2_KERNELS
    if (transB && sa == 1 && use_avx2()) {
      for (long j = 0; j < N; j++) c[j] += alpha * avx2_dot::dot(a, B + j * ldb, K);
      continue;
    }
#endif
    if (transB) {
      for (long j = 0; j < N; j++) {
        const T* b = B + j * ldb;
        T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        long k = 0;
        for (; k + 4 <= K; k += 4) {
          s0 += a[k * sa] * b[k];
          s1 += a[(k + 1) * sa] * b[k + 1];
          s2 += a[(k + 2) * sa] * b[k + 2];
          s3 += a[(k + 3) * sa] * b[k + 3];
        }
        for (; k < K; k++) s0 += a[k * sa] * b[k];
        c[j] += alpha * ((s0 + s1) + (s2 + s3));
      }
    } else {
      for (long k = 0; k < K; k++) {
        const T ak = alpha * a[k * sa];
        const T* b = B + k * ldb;
        for (long j = 0; j < N; j++) c[j] += ak * b[j];
      }
    }
  }
}

template <typename T>
using BlockedGemm = void (*)(bool, bool, long, long, long, T, const T*, long, const T*, long, T*, long, T*, T*);

/** One instantiation's blocked GEMM with this thread's packing buffers. */
template <typename T>
void run_blocked(BlockedGemm<T> kernel, long a_elems, long b_elems, bool transA, bool transB, long M, long N, long K,
                 T alpha, const T* A, long lda, const T* B, long ldb, T* C, long ldc) {
  thread_local Scratch scratch;
  T* base = static_cast<T*>(scratch.get(sizeof(T) * (a_elems + b_elems) + 64));
  if (base == nullptr) std::abort();
  kernel(transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc, base, base + a_elems + 64 / sizeof(T));
}

template <typename T>
struct Job {
  BlockedGemm<T> kernel;
  long a_elems, b_elems;
  bool transA, transB;
  long M, N, K;
  T alpha;
  const T* A;
  long lda;
  const T* B;
  long ldb;
  T* C;
  long ldc;
  void run() const { run_blocked(kernel, a_elems, b_elems, transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc); }
};

template <typename T>
void* run_job(void* job) {
  static_cast<Job<T>*>(job)->run();
  return nullptr;
}

/**
 * Splits C into `threads` column (or row) stripes, one per thread. Every element of C is still
 * computed by one thread with the same k-blocking and summation order, so the result is
 * bit-identical to the single-threaded one.
 */
template <typename T>
void run_parallel(BlockedGemm<T> kernel, long a_elems, long b_elems, bool transA, bool transB, long M, long N, long K,
                  T alpha, const T* A, long lda, const T* B, long ldb, T* C, long ldc) {
  const long threads = gemm_threads();
  const double work = static_cast<double>(M) * N * K;
  const bool split_n = N >= M;
  const long extent = split_n ? N : M;
  if (threads <= 1 || work < 8.0e6 || extent < 32 * threads) {
    run_blocked(kernel, a_elems, b_elems, transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc);
    return;
  }
  Job<T> jobs[kMaxThreads];
  pthread_t ids[kMaxThreads];
  bool started[kMaxThreads] = {};
  const long chunk = ((extent + threads - 1) / threads + 15) / 16 * 16;  // multiple of every NR in use
  long count = 0;
  for (long lo = 0; lo < extent && count < threads; lo += chunk, count++) {
    const long n = extent - lo < chunk ? extent - lo : chunk;
    Job<T> job{kernel, a_elems, b_elems, transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc};
    if (split_n) {
      job.N = n;
      job.B = transB ? B + lo * ldb : B + lo;
      job.C = C + lo;
    } else {
      job.M = n;
      job.A = transA ? A + lo : A + lo * lda;
      job.C = C + lo * ldc;
    }
    jobs[count] = job;
  }
  for (long t = 1; t < count; t++) started[t] = pthread_create(&ids[t], nullptr, run_job<T>, &jobs[t]) == 0;
  jobs[0].run();
  for (long t = 1; t < count; t++) {
    if (started[t])
      pthread_join(ids[t], nullptr);
    else
      jobs[t].run();  // could not start a thread: do its stripe here
  }
}

template <typename T>
void blocked(BlockedGemm<T> generic, void (*generic_sizes)(long*, long*), BlockedGemm<T> avx2,
             void (*avx2_sizes)(long*, long*), bool transA, bool transB, long M, long N, long K, T alpha, const T* A,
             long lda, const T* B, long ldb, T* C, long ldc) {
  long a_elems, b_elems;
  const bool fast = avx2 != nullptr && use_avx2();
  (fast ? avx2_sizes : generic_sizes)(&a_elems, &b_elems);
  run_parallel(fast ? avx2 : generic, a_elems, b_elems, transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

}  // namespace

long gemm_threads() {
  static const long n = [] {
    const char* env = std::getenv("LEVER_THREADS");
    long v = env != nullptr ? std::atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
    if (v < 1) v = 1;
    return v > kMaxThreads ? kMaxThreads : v;
  }();
  return n;
}

void sgemm(bool transA, bool transB, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
           long ldb, float beta, float* C, long ldc) {
  if (M <= 0 || N <= 0) return;
  scale_c(M, N, beta, C, ldc);
  if (K <= 0 || alpha == 0.0f) return;
  if (M <= 2) return gemm_few_rows(transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc);
#ifdef LEVER_HAVE_AVX2_KERNELS
  blocked<float>(generic_f32::gemm, generic_f32::buffer_sizes, avx2_f32::gemm, avx2_f32::buffer_sizes, transA, transB,
                 M, N, K, alpha, A, lda, B, ldb, C, ldc);
#else
  blocked<float>(generic_f32::gemm, generic_f32::buffer_sizes, nullptr, nullptr, transA, transB, M, N, K, alpha, A,
                 lda, B, ldb, C, ldc);
#endif
}

void dgemm(bool transA, bool transB, long M, long N, long K, double alpha, const double* A, long lda,
           const double* B, long ldb, double beta, double* C, long ldc) {
  if (M <= 0 || N <= 0) return;
  scale_c(M, N, beta, C, ldc);
  if (K <= 0 || alpha == 0.0) return;
  if (M <= 2) return gemm_few_rows(transA, transB, M, N, K, alpha, A, lda, B, ldb, C, ldc);
#ifdef LEVER_HAVE_AVX2_KERNELS
  blocked<double>(generic_f64::gemm, generic_f64::buffer_sizes, avx2_f64::gemm, avx2_f64::buffer_sizes, transA,
                  transB, M, N, K, alpha, A, lda, B, ldb, C, ldc);
#else
  blocked<double>(generic_f64::gemm, generic_f64::buffer_sizes, nullptr, nullptr, transA, transB, M, N, K, alpha, A,
                  lda, B, ldb, C, ldc);
#endif
}

const char* gemm_simd() { return use_avx2() ? "avx2+fma" : "generic"; }

namespace {
struct ScoreJob {
  long M, j0, j1, K;
  const float *A, *B;
  float* C;
  long ldc;
};
void* score_job(void* p) {
  const ScoreJob* job = static_cast<ScoreJob*>(p);
#ifdef LEVER_HAVE_AVX2_KERNELS
  avx2_nt::rows(job->M, job->j0, job->j1, job->K, job->A, job->B, job->C, job->ldc);
#endif
  return nullptr;
}
}  // namespace

bool score_rows(long M, long N, long K, const float* A, const float* B, float* C, long ldc) {
  if (!use_avx2()) return false;
  if (M <= 0 || N <= 0) return true;
  const long threads = N >= 3 * 256 ? gemm_threads() : 1;
  ScoreJob jobs[kMaxThreads];
  pthread_t ids[kMaxThreads];
  bool started[kMaxThreads] = {};
  const long chunk = ((N + threads - 1) / threads + 2) / 3 * 3;
  long count = 0;
  for (long lo = 0; lo < N && count < threads; lo += chunk, count++)
    jobs[count] = ScoreJob{M, lo, lo + chunk < N ? lo + chunk : N, K, A, B, C, ldc};
  for (long t = 1; t < count; t++) started[t] = pthread_create(&ids[t], nullptr, score_job, &jobs[t]) == 0;
  score_job(&jobs[0]);
  for (long t = 1; t < count; t++) {
    if (started[t])
      pthread_join(ids[t], nullptr);
    else
      score_job(&jobs[t]);
  }
  return true;
}

}  // namespace lever
