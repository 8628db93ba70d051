// topkScan: folds one GEMM block of scores into each query's running top-`cap` min-heap,
// exactly like the TypeScript scan in src/pools/search.ts (same heap order, same strict ">"
// tie rule, NaN never enters, excluded rows skipped), but ~10× faster: a whole chunk of scores
// is compared against the row's current worst kept score at once and only chunks holding a
// candidate are looked at one by one; query rows are split over two threads (disjoint heaps).
#define NAPI_VERSION 8
#include "pool_topk.h"

#include "napi_args.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lever {
namespace {

struct Heaps {
  float* score;
  int32_t* row;
  int32_t* size;
  long cap;
};

// Min-heap order: lower score is worse; at equal score the higher row is worse.
inline bool worse(float sa, int32_t ra, float sb, int32_t rb) { return sa < sb || (sa == sb && ra > rb); }

void heap_push(float* score, int32_t* row, long size, float s, int32_t r) {
  long i = size;
  while (i > 0) {
    const long parent = (i - 1) >> 1;
    if (!worse(s, r, score[parent], row[parent])) break;
    score[i] = score[parent];
    row[i] = row[parent];
    i = parent;
  }
  score[i] = s;
  row[i] = r;
}

void heap_replace_root(float* score, int32_t* row, long size, float s, int32_t r) {
  long i = 0;
  for (;;) {
    const long left = 2 * i + 1;
    if (left >= size) break;
    const long right = left + 1;
    long child = left;
    if (right < size && worse(score[right], row[right], score[left], row[left])) child = right;
    if (!worse(score[child], row[child], s, r)) break;
    score[i] = score[child];
    row[i] = row[child];
    i = child;
  }
  score[i] = s;
  row[i] = r;
}

struct Block {
  const float* C;  // qb × nb scores, row stride ldc
  long qb, nb, ldc, n0, q0;
  const int32_t* exclude_rows;   // CSR: rows excluded for query q are
  const int32_t* exclude_start;  // exclude_rows[exclude_start[q] .. exclude_start[q+1])
};

inline bool excluded(const Block& b, long q, int32_t row) {
  for (int32_t e = b.exclude_start[q], end = b.exclude_start[q + 1]; e < end; e++)
    if (b.exclude_rows[e] == row) return true;
  return false;
}

// Does any of the 16 scores at c beat `worst`? (NaN never does, as with a scalar ">").
inline bool any_greater16(const float* c, float worst) {
#if defined(__SSE2__)
  const __m128 w = _mm_set1_ps(worst);
  const __m128 m = _mm_or_ps(_mm_or_ps(_mm_cmpgt_ps(_mm_loadu_ps(c), w), _mm_cmpgt_ps(_mm_loadu_ps(c + 4), w)),
                             _mm_or_ps(_mm_cmpgt_ps(_mm_loadu_ps(c + 8), w), _mm_cmpgt_ps(_mm_loadu_ps(c + 12), w)));
  return _mm_movemask_ps(m) != 0;
#else
  int any = 0;
  for (int t = 0; t < 16; t++) any |= c[t] > worst;
  return any != 0;
#endif
}

void scan_rows(const Block& b, const Heaps& h, long i0, long i1) {
  constexpr long kChunk = 16;
  const long cap = h.cap;
  for (long i = i0; i < i1; i++) {
    const long q = b.q0 + i;
    float* score = h.score + q * cap;
    int32_t* row = h.row + q * cap;
    long size = h.size[q];
    float worst = size < cap ? -INFINITY : score[0];
    const float* c = b.C + i * b.ldc;
    auto consider = [&](long j) {
      const float s = c[j];
      if (!(s > worst)) return;
      const int32_t r = static_cast<int32_t>(b.n0 + j);
      if (excluded(b, q, r)) return;
      if (size < cap) {
        heap_push(score, row, size, s, r);
        size++;
        if (size == cap) worst = score[0];
      } else {
        heap_replace_root(score, row, cap, s, r);
        worst = score[0];
      }
    };
    long j = 0;
    for (; j + kChunk <= b.nb; j += kChunk) {
      if (!any_greater16(c + j, worst)) continue;
      for (long t = 0; t < kChunk; t++) consider(j + t);
    }
    for (; j < b.nb; j++) consider(j);
    h.size[q] = static_cast<int32_t>(size);
  }
}

bool fail(napi_env env, const std::string& message) {
  napi_throw_range_error(env, nullptr, ("topkScan: " + message).c_str());
  return false;
}

}  // namespace

// topkScan(C, qb, nb, ldc, n0, q0, cap, heapScore, heapRow, heapSize, excludeRows, excludeStart, threads)
napi_value TopkScan(napi_env env, napi_callback_info info) {
  size_t argc = 13;
  napi_value argv[13];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 13) return fail(env, "expected 13 arguments"), nullptr;
  Block b;
  Heaps h;
  float *C, *score;
  int32_t *row, *size, *ex_rows, *ex_start;
  long lenC, lenScore, lenRow, lenSize, lenExRows, lenExStart, threads;
  if (!get_array(env, argv[0], napi_float32_array, &C, &lenC, "topkScan: C") || !get_long(env, argv[1], &b.qb, "topkScan: qb") ||
      !get_long(env, argv[2], &b.nb, "topkScan: nb") || !get_long(env, argv[3], &b.ldc, "topkScan: ldc") ||
      !get_long(env, argv[4], &b.n0, "topkScan: n0") || !get_long(env, argv[5], &b.q0, "topkScan: q0") ||
      !get_long(env, argv[6], &h.cap, "topkScan: cap") ||
      !get_array(env, argv[7], napi_float32_array, &score, &lenScore, "topkScan: heapScore") ||
      !get_array(env, argv[8], napi_int32_array, &row, &lenRow, "topkScan: heapRow") ||
      !get_array(env, argv[9], napi_int32_array, &size, &lenSize, "topkScan: heapSize") ||
      !get_array(env, argv[10], napi_int32_array, &ex_rows, &lenExRows, "topkScan: excludeRows") ||
      !get_array(env, argv[11], napi_int32_array, &ex_start, &lenExStart, "topkScan: excludeStart") ||
      !get_long(env, argv[12], &threads, "topkScan: threads"))
    return nullptr;
  const long queries = b.q0 + b.qb;
  if (b.qb > 0 && (b.ldc < b.nb || lenC < (b.qb - 1) * b.ldc + b.nb))
    return fail(env, "C is too small for qb × nb with stride ldc"), nullptr;
  if (h.cap < 1 || lenSize < queries || lenScore < queries * h.cap || lenRow < queries * h.cap)
    return fail(env, "heap arrays are too small for (q0 + qb) queries × cap"), nullptr;
  if (lenExStart < queries + 1) return fail(env, "excludeStart needs q0 + qb + 1 entries"), nullptr;
  for (long q = b.q0; q < queries; q++)
    if (ex_start[q] < 0 || ex_start[q] > ex_start[q + 1] || ex_start[q + 1] > lenExRows)
      return fail(env, "excludeStart is not a valid offset list into excludeRows"), nullptr;
  for (long q = b.q0; q < queries; q++)
    if (size[q] < 0 || size[q] > h.cap) return fail(env, "heapSize entries must lie in [0, cap]"), nullptr;
  b.C = C;
  b.exclude_rows = ex_rows;
  b.exclude_start = ex_start;
  h.score = score;
  h.row = row;
  h.size = size;
  // Rows are independent (each owns its heap), so any split gives the same result.
  if (threads < 2 || b.qb < 8) {
    scan_rows(b, h, 0, b.qb);
  } else {
    const long half = b.qb / 2;
    std::thread other([&] { scan_rows(b, h, half, b.qb); });
    scan_rows(b, h, 0, half);
    other.join();
  }
  return nullptr;
}

}  // namespace lever
