#include "Blas.h"

#include <cblas.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace sextant::ir::blas {

namespace {

constexpr const char* kDefaultLibrary = "libopenblas.so.0";

// The entry points we use, typed from cblas.h so a mismatch is a compile error.
struct Api {
    decltype(&cblas_sgemm) sgemm = nullptr;
    decltype(&cblas_dgemm) dgemm = nullptr;
    decltype(&openblas_get_corename) getCorename = nullptr;
    decltype(&openblas_get_config) getConfig = nullptr;
    decltype(&openblas_set_num_threads) setNumThreads = nullptr;
    decltype(&openblas_get_num_threads) getNumThreads = nullptr;
};

struct State {
    std::once_flag once;
    Api api;
    Info info;
};

State& state() {
    static State s;
    return s;
}

[[noreturn]] void fail(const std::string& library, const std::string& what) {
    std::fprintf(stderr,
                 "sextant: cannot load OpenBLAS (%s): %s; install Debian's libopenblas0 package "
                 "(apt-get install libopenblas0)\n",
                 library.c_str(), what.c_str());
    std::fflush(stderr);
    std::_Exit(127);
}

template <typename F> void resolve(void* handle, const std::string& library, const char* name, F& out) {
    void* p = dlsym(handle, name);
    if (!p)
        fail(library, std::string("symbol ") + name + " missing");
    out = reinterpret_cast<F>(p);
}

// "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "0.3.21".
std::string versionFromConfig(const std::string& config) {
    const std::string prefix = "OpenBLAS ";
    if (config.rfind(prefix, 0) != 0)
        return {};
    size_t end = config.find(' ', prefix.size());
    return config.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
}

void load() {
    State& s = state();
    Info& info = s.info;
    const char* override = std::getenv("SEXTANT_BLAS_LIBRARY");
    info.library = override && *override ? override : kDefaultLibrary;

    // OpenBLAS reads OPENBLAS_CORETYPE once, in its constructor, which dlopen runs. An empty value
    // counts as unset (OpenBLAS would treat it as an unknown forced name).
    const char* userEnv = std::getenv("OPENBLAS_CORETYPE");
    const bool userSet = userEnv != nullptr;
    const std::string user = userEnv ? userEnv : "";
    bool setByUs = false;
    if (!user.empty()) {
        info.choice = CoreChoice::User;
        info.requested = user;
        info.reason = "OPENBLAS_CORETYPE is set";
    } else {
        std::string reason;
        std::string core = preferredCore(&reason);
        if (!core.empty()) {
            info.choice = CoreChoice::Sextant;
            info.requested = core;
            info.reason = reason;
            setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
            setByUs = true;
        } else {
            info.choice = CoreChoice::OpenBlas;
            info.reason = reason.empty() ? "OpenBLAS's own CPU detection" : reason;
        }
    }

    void* handle = dlopen(info.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    // Leave the environment as the user gave it: child processes decide for themselves.
    if (setByUs) {
        if (userSet)
            setenv("OPENBLAS_CORETYPE", user.c_str(), 1);
        else
            unsetenv("OPENBLAS_CORETYPE");
    }
    if (!handle) {
        const char* err = dlerror();
        fail(info.library, err ? err : "dlopen failed");
    }

    Api& api = s.api;
    resolve(handle, info.library, "cblas_sgemm", api.sgemm);
    resolve(handle, info.library, "cblas_dgemm", api.dgemm);
    resolve(handle, info.library, "openblas_get_corename", api.getCorename);
    resolve(handle, info.library, "openblas_get_config", api.getConfig);
    resolve(handle, info.library, "openblas_set_num_threads", api.setNumThreads);
    resolve(handle, info.library, "openblas_get_num_threads", api.getNumThreads);
    // The handle stays open for the life of the process.

    const char* config = api.getConfig();
    info.config = config ? config : "";
    info.version = versionFromConfig(info.config);
    const char* core = api.getCorename();
    info.core = core ? core : "";
}

const Api& api() {
    State& s = state();
    std::call_once(s.once, load);
    return s.api;
}

// Load before main, while the process is single-threaded (setenv is not thread-safe). The gemm
// wrappers below live in this file, so any program that can call BLAS links this initializer.
[[maybe_unused]] const bool kLoadedBeforeMain = (api(), true);

} // namespace

std::string preferredCore(std::string* reason) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    // May run before libgcc's own constructor has filled the CPU model.
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        if (reason)
            *reason = "the CPU has AVX-512F/BW/DQ/VL";
        return "SkylakeX";
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        if (reason)
            *reason = "the CPU has AVX2 and FMA";
        return "Haswell";
    }
    if (reason)
        *reason = "the CPU has neither AVX-512 nor AVX2+FMA: OpenBLAS's own CPU detection";
    return {};
#else
    if (reason)
        *reason = "not an x86-64 build: OpenBLAS's own CPU detection";
    return {};
#endif
}

const Info& info() {
    api();
    return state().info;
}

std::string describe() {
    const Info& i = info();
    std::string out = "OpenBLAS";
    if (!i.version.empty())
        out += " " + i.version;
    out += ", " + (i.core.empty() ? std::string("unknown") : i.core) + " kernels (";
    switch (i.choice) {
    case CoreChoice::User:
        out += "OPENBLAS_CORETYPE=" + i.requested;
        break;
    case CoreChoice::Sextant:
        out += "chosen by Sextant: " + i.reason + "; set OPENBLAS_CORETYPE to override";
        break;
    case CoreChoice::OpenBlas:
        out += i.reason;
        break;
    }
    out += ")";
    if (i.library != kDefaultLibrary)
        out += " from " + i.library;
    return out;
}

void setNumThreads(int threads) { api().setNumThreads(threads); }

int numThreads() { return api().getNumThreads(); }

void sgemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
    api().sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dgemm(bool transA, bool transB, int m, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc) {
    api().dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

} // namespace sextant::ir::blas
