// N-API binding of the lever numeric kernels (module lever_native). Typed on the TypeScript side by
// `NativeAddon` in src/tensor/native.ts, which checks on load that every export below is present;
// each has a TypeScript twin with the same results, used when the addon is missing.
//
// Exports:
//   sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), dgemm(same in float64)
//       row-major BLAS GEMM, served by the system OpenBLAS when it was found at build time (loaded
//       with dlopen, so a later-removed library only means falling back) and by our own GEMM
//       (gemm.cc) otherwise;
//   setOpenBlasMinWork(work)   products below `work` multiply-adds use our own GEMM;
//   info()                     { openblas: path or "", threads, simd } for `lever doctor`;
//   adamw(w, g, m, v, b1, b2, eps, decay, stepSize, invSqrtBc2)
//       fused AdamW element update (PyTorch semantics, see src/tensor/optim.ts);
//   sumSquares(x)              Σ x² in float64, and
//   scaleInPlace(x, s)         x *= s: the two pieces of the global gradient norm and its clipping;
//   gateForward(a, b, h, c, H, out, g, y, norms)
//       forward of the selector's fused gate state update (src/selector/gate-op.ts);
//   topkScan(C, qb, nb, ldc, n0, q0, cap, heapScore, heapRow, heapSize, excludeRows, excludeStart, threads)
//       folds a block of similarity scores into per-query top-K heaps (pool_topk.cc, for
//       src/pools/search.ts);
//   scoreRows(M, N, K, A, B, C, ldc)
//       C = A·Bᵀ screening scores of cosine search without packing (gemm.cc score_rows); false when
//       the CPU has no AVX2+FMA (src/pools/search.ts then uses sgemm).
#define NAPI_VERSION 8
#include <dlfcn.h>
#include <node_api.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gemm.h"
#include "napi_args.h"
#include "pool_topk.h"

#ifndef LEVER_OPENBLAS_PATH
#define LEVER_OPENBLAS_PATH ""
#endif

namespace {

// CBLAS ABI (enum values fixed by the CBLAS standard), so no cblas.h is needed.
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);
typedef int (*threads_fn)();
typedef void (*set_threads_fn)(int);

struct OpenBlas {
  sgemm_fn sgemm = nullptr;
  dgemm_fn dgemm = nullptr;
  set_threads_fn set_threads = nullptr;
  int max_threads = 1;  // OpenBLAS's own count at load (OPENBLAS_NUM_THREADS, else online CPUs)
  std::string path;
};

OpenBlas load_openblas() {
  OpenBlas lib;
  const char* env = std::getenv("LEVER_OPENBLAS");
  if (env != nullptr && std::strcmp(env, "0") == 0) return lib;
  const char* path = LEVER_OPENBLAS_PATH;
  if (path[0] == '\0') return lib;
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return lib;
  lib.sgemm = reinterpret_cast<sgemm_fn>(dlsym(handle, "cblas_sgemm"));
  lib.dgemm = reinterpret_cast<dgemm_fn>(dlsym(handle, "cblas_dgemm"));
  auto threads = reinterpret_cast<threads_fn>(dlsym(handle, "openblas_get_num_threads"));
  lib.set_threads = reinterpret_cast<set_threads_fn>(dlsym(handle, "openblas_set_num_threads"));
  if (lib.sgemm == nullptr || lib.dgemm == nullptr) return OpenBlas();
  if (threads != nullptr) lib.max_threads = threads();
  lib.path = path;
  return lib;
}

const OpenBlas& openblas() {
  static const OpenBlas lib = load_openblas();
  return lib;
}

// Problems below this many multiply-adds go to our own GEMM even when OpenBLAS is loaded: for
// tiny products OpenBLAS's threading and dispatch cost more than the arithmetic.
double openblas_min_work = 64.0 * 64 * 64;

// OpenBLAS runs a product on all its threads only from this many multiply-adds on. The selector's
// many small GEMMs (≤ 256×512×256) lose more to waking and spinning workers on a shared 2-core
// machine than they gain (training-step GEMM time halved on one thread), while the pool search's
// 512×8192×512 blocks need every core. The choice is per call, so both get what suits them.
const double openblas_parallel_work = 64.0 * 1024 * 1024;

void use_openblas_threads(const OpenBlas& blas, double work) {
  static int current = -1;
  if (blas.set_threads == nullptr) return;
  const int wanted = work >= openblas_parallel_work ? blas.max_threads : 1;
  if (wanted != current) {
    blas.set_threads(wanted);
    current = wanted;
  }
}

using lever::get_array;
using lever::get_long;
using lever::throw_error;

long required(long rows, long cols, long ld) { return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols; }

// gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
template <typename T>
napi_value Gemm(napi_env env, napi_callback_info info) {
  const napi_typedarray_type kind = sizeof(T) == 4 ? napi_float32_array : napi_float64_array;
  size_t argc = 13;
  napi_value argv[13];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 13) {
    throw_error(env, "gemm: expected 13 arguments");
    return nullptr;
  }
  bool transA, transB;
  if (napi_get_value_bool(env, argv[0], &transA) != napi_ok || napi_get_value_bool(env, argv[1], &transB) != napi_ok) {
    throw_error(env, "gemm: transA/transB must be booleans");
    return nullptr;
  }
  long M, N, K, lda, ldb, ldc, lenA, lenB, lenC;
  double alpha, beta;
  T *A, *B, *C;
  if (!get_long(env, argv[2], &M, "gemm: M") || !get_long(env, argv[3], &N, "gemm: N") || !get_long(env, argv[4], &K, "gemm: K") ||
      !get_long(env, argv[7], &lda, "gemm: lda") || !get_long(env, argv[9], &ldb, "gemm: ldb") ||
      !get_long(env, argv[12], &ldc, "gemm: ldc") || !get_array(env, argv[6], kind, &A, &lenA, "gemm: A") ||
      !get_array(env, argv[8], kind, &B, &lenB, "gemm: B") || !get_array(env, argv[11], kind, &C, &lenC, "gemm: C"))
    return nullptr;
  if (napi_get_value_double(env, argv[5], &alpha) != napi_ok || napi_get_value_double(env, argv[10], &beta) != napi_ok) {
    throw_error(env, "gemm: alpha/beta must be numbers");
    return nullptr;
  }
  const long aRows = transA ? K : M, aCols = transA ? M : K;
  const long bRows = transB ? N : K, bCols = transB ? K : N;
  if (lda < (aCols > 1 ? aCols : 1) || ldb < (bCols > 1 ? bCols : 1) || ldc < (N > 1 ? N : 1) ||
      lenA < required(aRows, aCols, lda) || lenB < required(bRows, bCols, ldb) || lenC < required(M, N, ldc)) {
    throw_error(env, "gemm: a buffer is too small for the given sizes and leading dimensions");
    return nullptr;
  }
  if (M == 0 || N == 0) return nullptr;
  const OpenBlas& blas = openblas();
  const int ta = transA ? CblasTrans : CblasNoTrans;
  const int tb = transB ? CblasTrans : CblasNoTrans;
  if constexpr (sizeof(T) == 4) {
    if (blas.sgemm != nullptr && K > 0 && static_cast<double>(M) * N * K >= openblas_min_work) {
      use_openblas_threads(blas, static_cast<double>(M) * N * K);
      blas.sgemm(CblasRowMajor, ta, tb, M, N, K, static_cast<float>(alpha), A, lda, B, ldb, static_cast<float>(beta), C,
                 ldc);
    } else {
      lever::sgemm(transA, transB, M, N, K, static_cast<float>(alpha), A, lda, B, ldb, static_cast<float>(beta), C, ldc);
    }
  } else {
    if (blas.dgemm != nullptr && K > 0 && static_cast<double>(M) * N * K >= openblas_min_work) {
      use_openblas_threads(blas, static_cast<double>(M) * N * K);
      blas.dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    } else {
      lever::dgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
  }
  return nullptr;
}

// Fused AdamW update (PyTorch semantics; see src/tensor/optim.ts for the formula):
// adamw(w, g, m, v, b1, b2, eps, decay, stepSize, invSqrtBc2); w and g share a dtype, m and v are float64.
template <typename T>
void adamw_kernel(T* w, const T* g, double* m, double* v, long n, double b1, double b2, double eps, double decay,
                  double step, double inv_sqrt_bc2) {
  const double c1 = 1 - b1, c2 = 1 - b2;
  for (long i = 0; i < n; i++) {
    const double gi = g[i];
    const double mi = b1 * m[i] + c1 * gi;
    const double vi = b2 * v[i] + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] = static_cast<T>(w[i] * decay - step * mi / (__builtin_sqrt(vi) * inv_sqrt_bc2 + eps));
  }
}

napi_value AdamW(napi_env env, napi_callback_info info) {
  size_t argc = 10;
  napi_value argv[10];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 10) {
    throw_error(env, "adamw: expected 10 arguments");
    return nullptr;
  }
  double s[6];
  for (int i = 0; i < 6; i++) {
    if (napi_get_value_double(env, argv[4 + i], &s[i]) != napi_ok) {
      throw_error(env, "adamw: hyper-parameters must be numbers");
      return nullptr;
    }
  }
  double *m, *v;
  long lm, lv, lw, lg;
  if (!get_array(env, argv[2], napi_float64_array, &m, &lm, "adamw: m") ||
      !get_array(env, argv[3], napi_float64_array, &v, &lv, "adamw: v"))
    return nullptr;
  napi_typedarray_type type;
  size_t len;
  void* ptr;
  bool is_typed = false;
  napi_is_typedarray(env, argv[0], &is_typed);
  if (!is_typed || napi_get_typedarray_info(env, argv[0], &type, &len, &ptr, nullptr, nullptr) != napi_ok) {
    throw_error(env, "adamw: w must be a Float32Array or Float64Array");
    return nullptr;
  }
  if (type == napi_float32_array) {
    float *w = static_cast<float*>(ptr), *g;
    lw = static_cast<long>(len);
    if (!get_array(env, argv[1], napi_float32_array, &g, &lg, "adamw: g")) return nullptr;
    if (lg != lw || lm != lw || lv != lw) return throw_error(env, "adamw: w, g, m, v lengths differ"), nullptr;
    adamw_kernel(w, g, m, v, lw, s[0], s[1], s[2], s[3], s[4], s[5]);
  } else if (type == napi_float64_array) {
    double *w = static_cast<double*>(ptr), *g;
    lw = static_cast<long>(len);
    if (!get_array(env, argv[1], napi_float64_array, &g, &lg, "adamw: g")) return nullptr;
    if (lg != lw || lm != lw || lv != lw) return throw_error(env, "adamw: w, g, m, v lengths differ"), nullptr;
    adamw_kernel(w, g, m, v, lw, s[0], s[1], s[2], s[3], s[4], s[5]);
  } else {
    throw_error(env, "adamw: w must be a Float32Array or Float64Array");
  }
  return nullptr;
}

// Views any float typed array; false (with a thrown error) otherwise.
bool get_float_array(napi_env env, napi_value v, napi_typedarray_type* type, void** data, long* length,
                     const char* what) {
  bool is_typed = false;
  size_t len;
  napi_is_typedarray(env, v, &is_typed);
  if (!is_typed || napi_get_typedarray_info(env, v, type, &len, data, nullptr, nullptr) != napi_ok ||
      (*type != napi_float32_array && *type != napi_float64_array)) {
    std::string msg = std::string(what) + " must be a Float32Array or Float64Array";
    return throw_error(env, msg.c_str());
  }
  *length = static_cast<long>(len);
  return true;
}

// sumSquares(x): Σ x² accumulated in double (for the global gradient norm).
napi_value SumSquares(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  napi_typedarray_type type;
  void* data;
  long n;
  if (argc != 1 || !get_float_array(env, argv[0], &type, &data, &n, "sumSquares: x")) return nullptr;
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  long i = 0;
  if (type == napi_float32_array) {
    const float* x = static_cast<const float*>(data);
    for (; i + 4 <= n; i += 4) {
      s0 += double(x[i]) * x[i];
      s1 += double(x[i + 1]) * x[i + 1];
      s2 += double(x[i + 2]) * x[i + 2];
      s3 += double(x[i + 3]) * x[i + 3];
    }
    for (; i < n; i++) s0 += double(x[i]) * x[i];
  } else {
    const double* x = static_cast<const double*>(data);
    for (; i + 4 <= n; i += 4) {
      s0 += x[i] * x[i];
      s1 += x[i + 1] * x[i + 1];
      s2 += x[i + 2] * x[i + 2];
      s3 += x[i + 3] * x[i + 3];
    }
    for (; i < n; i++) s0 += x[i] * x[i];
  }
  napi_value out;
  napi_create_double(env, (s0 + s1) + (s2 + s3), &out);
  return out;
}

// scaleInPlace(x, s): x *= s.
napi_value ScaleInPlace(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  napi_typedarray_type type;
  void* data;
  long n;
  double s;
  if (argc != 2 || !get_float_array(env, argv[0], &type, &data, &n, "scaleInPlace: x")) return nullptr;
  if (napi_get_value_double(env, argv[1], &s) != napi_ok) return throw_error(env, "scaleInPlace: s must be a number"), nullptr;
  if (type == napi_float32_array) {
    float* x = static_cast<float*>(data);
    for (long i = 0; i < n; i++) x[i] = static_cast<float>(x[i] * s);
  } else {
    double* x = static_cast<double*>(data);
    for (long i = 0; i < n; i++) x[i] *= s;
  }
  return nullptr;
}

// gateForward(a, b, h, c, H, out, g, y, norms): the selector's fused gate state update (see
// src/selector/gate-op.ts): g = σ(a + b), y = c + g⊙(h − c), out = y / max(‖y‖, 1e-12) per row of H.
// a, b, h, c, out share a dtype; g, y (for the backward) and norms are float64, as in the TS version.
template <typename T>
void gate_forward_kernel(const T* a, const T* b, const T* h, const T* c, long rows, long H, T* out, double* g,
                         double* y, double* norms) {
  for (long r = 0; r < rows; r++) {
    const long o = r * H;
    double sq = 0;
    for (long j = o; j < o + H; j++) {
      const double gj = 1 / (1 + std::exp(-(static_cast<double>(a[j]) + static_cast<double>(b[j]))));
      const double yj = c[j] + gj * (static_cast<double>(h[j]) - c[j]);
      g[j] = gj;
      y[j] = yj;
      sq += yj * yj;
    }
    const double n = std::sqrt(sq);
    norms[r] = n;
    const double inv = 1 / (n > 1e-12 ? n : 1e-12);
    for (long j = o; j < o + H; j++) out[j] = static_cast<T>(y[j] * inv);
  }
}

napi_value GateForward(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 9) return throw_error(env, "gateForward: expected 9 arguments"), nullptr;
  napi_typedarray_type type[5];
  void* data[5];
  long len[5], H, lg, ly, ln;
  const char* names[5] = {"gateForward: a", "gateForward: b", "gateForward: h", "gateForward: c", "gateForward: out"};
  for (int i = 0; i < 5; i++) {
    const int arg = i < 4 ? i : 5;
    if (!get_float_array(env, argv[arg], &type[i], &data[i], &len[i], names[i])) return nullptr;
    if (type[i] != type[0] || len[i] != len[0])
      return throw_error(env, "gateForward: a, b, h, c, out must share dtype and length"), nullptr;
  }
  double *g, *y, *norms;
  if (!get_long(env, argv[4], &H, "gateForward: H") ||
      !get_array(env, argv[6], napi_float64_array, &g, &lg, "gateForward: g") ||
      !get_array(env, argv[7], napi_float64_array, &y, &ly, "gateForward: y") ||
      !get_array(env, argv[8], napi_float64_array, &norms, &ln, "gateForward: norms"))
    return nullptr;
  const long rows = H == 0 ? 0 : len[0] / H;
  if (H == 0 || rows * H != len[0] || lg != len[0] || ly != len[0] || ln != rows)
    return throw_error(env, "gateForward: lengths do not match H"), nullptr;
  if (type[0] == napi_float32_array)
    gate_forward_kernel(static_cast<const float*>(data[0]), static_cast<const float*>(data[1]),
                        static_cast<const float*>(data[2]), static_cast<const float*>(data[3]), rows, H,
                        static_cast<float*>(data[4]), g, y, norms);
  else
    gate_forward_kernel(static_cast<const double*>(data[0]), static_cast<const double*>(data[1]),
                        static_cast<const double*>(data[2]), static_cast<const double*>(data[3]), rows, H,
                        static_cast<double*>(data[4]), g, y, norms);
  return nullptr;
}

// setOpenBlasMinWork(n): route GEMMs with M·N·K < n to our own kernels (Infinity = never use OpenBLAS).
napi_value SetOpenBlasMinWork(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  double v;
  if (argc != 1 || napi_get_value_double(env, argv[0], &v) != napi_ok || !(v >= 0)) {
    throw_error(env, "setOpenBlasMinWork: expected a non-negative number");
    return nullptr;
  }
  openblas_min_work = v;
  return nullptr;
}

// scoreRows(M, N, K, A, B, C, ldc): C[i·ldc + j] = A_i · B_j (gemm.cc score_rows); false when the CPU
// has no AVX2+FMA kernel (C untouched; the caller uses sgemm).
napi_value ScoreRows(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 7) {
    throw_error(env, "scoreRows: expected 7 arguments");
    return nullptr;
  }
  long M, N, K, ldc, lenA, lenB, lenC;
  float *A, *B, *C;
  if (!get_long(env, argv[0], &M, "scoreRows: M") || !get_long(env, argv[1], &N, "scoreRows: N") ||
      !get_long(env, argv[2], &K, "scoreRows: K") || !get_long(env, argv[6], &ldc, "scoreRows: ldc") ||
      !get_array(env, argv[3], napi_float32_array, &A, &lenA, "scoreRows: A") ||
      !get_array(env, argv[4], napi_float32_array, &B, &lenB, "scoreRows: B") ||
      !get_array(env, argv[5], napi_float32_array, &C, &lenC, "scoreRows: C"))
    return nullptr;
  if (ldc < (N > 1 ? N : 1) || lenA < M * K || lenB < N * K || lenC < required(M, N, ldc)) {
    throw_error(env, "scoreRows: a buffer is too small for the given sizes");
    return nullptr;
  }
  napi_value out;
  napi_get_boolean(env, lever::score_rows(M, N, K, A, B, C, ldc), &out);
  return out;
}

napi_value Info(napi_env env, napi_callback_info) {
  const OpenBlas& blas = openblas();
  napi_value obj, path, threads, simd;
  napi_create_object(env, &obj);
  napi_create_string_utf8(env, blas.path.c_str(), NAPI_AUTO_LENGTH, &path);
  napi_create_int32(env, blas.sgemm != nullptr ? blas.max_threads : lever::gemm_threads(), &threads);
  napi_create_string_utf8(env, lever::gemm_simd(), NAPI_AUTO_LENGTH, &simd);
  napi_set_named_property(env, obj, "openblas", path);
  napi_set_named_property(env, obj, "threads", threads);
  napi_set_named_property(env, obj, "simd", simd);
  return obj;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"sgemm", nullptr, Gemm<float>, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"dgemm", nullptr, Gemm<double>, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"adamw", nullptr, AdamW, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"sumSquares", nullptr, SumSquares, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"scaleInPlace", nullptr, ScaleInPlace, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"setOpenBlasMinWork", nullptr, SetOpenBlasMinWork, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"topkScan", nullptr, lever::TopkScan, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"scoreRows", nullptr, ScoreRows, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"gateForward", nullptr, GateForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"info", nullptr, Info, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
