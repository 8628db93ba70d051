// Our own GEMM (used when OpenBLAS is not available): row-major BLAS semantics,
// C = alpha·op(A)·op(B) + beta·C; beta = 0 overwrites C.
#pragma once

namespace lever {

void sgemm(bool transA, bool transB, long M, long N, long K, float alpha, const float* A, long lda, const float* B,
           long ldb, float beta, float* C, long ldc);
void dgemm(bool transA, bool transB, long M, long N, long K, double alpha, const double* A, long lda,
           const double* B, long ldb, double beta, double* C, long ldc);

/** Threads our GEMM splits large products over: $LEVER_THREADS, else the online CPUs (max 8). */
long gemm_threads();

/**
 * Cosine-search screening scores C[i·ldc + j] = A_i · B_j (A: M×K, B: N×K, row-major, contiguous) with the
 * AVX2 kernel, no packing, split over gemm_threads() stripes of B. Returns false (C untouched) when the
 * CPU has no AVX2+FMA: the caller uses sgemm.
 */
bool score_rows(long M, long N, long K, const float* A, const float* B, float* C, long ldc);

/** "avx2+fma" when the CPU runs the AVX2 micro-kernels, otherwise "generic" (SSE2 / portable). */
const char* gemm_simd();

}  // namespace lever
