#pragma once

// The one door to OpenBLAS. Sextant does not link libopenblas: it loads Debian's
// "libopenblas.so.0" at run time (before main, from a static initializer of Blas.cpp), because
// OpenBLAS picks its kernels in its library constructor from the CPU model, and Debian 12's
// OpenBLAS 0.3.21 does not know recent CPUs (it falls back to SSE3 "Prescott" kernels on an
// AVX-512 Xeon). Loading it ourselves lets us set OPENBLAS_CORETYPE from the CPU's features first
// when the user has not set it. If the library cannot be loaded the process prints one line naming
// it and the Debian package, and exits with status 127 (what a missing shared library gives).

#include <string>

namespace sextant::ir::blas {

/// Who chose the kernel family OpenBLAS runs.
enum class CoreChoice {
    User,     ///< OPENBLAS_CORETYPE was set (non-empty) in the environment: it always wins
    Sextant,  ///< unset; Sextant chose from the CPU's features (AVX-512 -> SkylakeX, AVX2+FMA -> Haswell)
    OpenBlas, ///< unset and no feature rule applied: OpenBLAS's own CPU detection
};

/// What was loaded and which kernels run.
struct Info {
    std::string library;   ///< the file name passed to dlopen ("libopenblas.so.0" unless overridden)
    std::string version;   ///< "0.3.21" (from openblas_get_config), empty when unknown
    std::string config;    ///< openblas_get_config() verbatim
    std::string core;      ///< openblas_get_corename(): the kernel family that runs ("SkylakeX")
    CoreChoice choice = CoreChoice::OpenBlas;
    std::string requested; ///< the OPENBLAS_CORETYPE value in force at load time (user's or ours)
    std::string reason;    ///< why, in words ("the CPU has AVX-512F/BW/DQ/VL")
};

/// Loads OpenBLAS if that has not happened yet (it normally happens before main) and returns what
/// was loaded. Never returns when the library cannot be loaded (see the header comment).
/// SEXTANT_BLAS_LIBRARY, when set, names another OpenBLAS shared library to load instead.
const Info& info();

/// One line for logs and benchmark context, e.g. "OpenBLAS 0.3.21, SkylakeX kernels (chosen by
/// Sextant: the CPU has AVX-512F/BW/DQ/VL; set OPENBLAS_CORETYPE to override)".
std::string describe();

/// The kernel family Sextant would request for this CPU when OPENBLAS_CORETYPE is unset: "SkylakeX",
/// "Haswell", or empty (leave it to OpenBLAS). `reason` receives the features that decided it.
std::string preferredCore(std::string* reason = nullptr);

/// Number of threads OpenBLAS uses for one call (openblas_set_num_threads / get_num_threads).
/// The benchmarks set 1 to compare with single-threaded onnxruntime.
void setNumThreads(int threads);
int numThreads();

/// Row-major C = alpha * op(A) * op(B) + beta * C (cblas_sgemm / cblas_dgemm).
void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);
void dgemm(bool transA, bool transB, int m, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc);

} // namespace sextant::ir::blas
