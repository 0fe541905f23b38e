// OpenBLAS is loaded at run time by core/ir/Blas.cpp, which chooses the kernel family from the
// CPU's features unless the user set OPENBLAS_CORETYPE. The choice happens once per process before
// main, so these tests run tests/ir/probe/BlasProbe.cpp as a child with a controlled environment.

#include "core/ir/Blas.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <string>

namespace {

struct ProbeRun {
    int exitCode = -1;
    std::string output; // stdout and stderr
    std::map<std::string, std::string> fields;
};

// Runs the probe with OPENBLAS_CORETYPE and SEXTANT_BLAS_LIBRARY removed from the environment,
// then `assignments` ("NAME=value ...") added.
ProbeRun runProbe(const std::string& assignments) {
    ProbeRun run;
    std::string cmd = "env -u OPENBLAS_CORETYPE -u SEXTANT_BLAS_LIBRARY " + assignments + " '" +
                      std::string(SEXTANT_BLAS_PROBE) + "' 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p)
        return run;
    char buf[512];
    while (fgets(buf, sizeof buf, p))
        run.output += buf;
    int status = pclose(p);
    run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    size_t pos = 0;
    while (pos < run.output.size()) {
        size_t end = run.output.find('\n', pos);
        if (end == std::string::npos)
            end = run.output.size();
        std::string line = run.output.substr(pos, end - pos);
        size_t eq = line.find('=');
        if (eq != std::string::npos)
            run.fields[line.substr(0, eq)] = line.substr(eq + 1);
        pos = end + 1;
    }
    return run;
}

bool hasAvx2Fma() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

TEST(Blas, ChoosesModernKernelsOnAnAvx2Cpu) {
    if (!hasAvx2Fma())
        GTEST_SKIP() << "the CPU has no AVX2+FMA: OpenBLAS's own detection applies, nothing to check";
    ProbeRun run = runProbe("");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    EXPECT_NE(run.fields["core"], "Prescott") << run.output;
    EXPECT_EQ(run.fields["choice"], "sextant") << run.output;
    EXPECT_EQ(run.fields["core"], sextant::ir::blas::preferredCore()) << run.output;
    EXPECT_NE(run.fields["describe"].find("chosen by Sextant"), std::string::npos) << run.output;
    EXPECT_EQ(run.fields["sgemm"], "19 22 43 50") << run.output;
}

TEST(Blas, UserCoreTypeWins) {
#if !defined(__x86_64__)
    GTEST_SKIP() << "Prescott kernels exist only in x86-64 OpenBLAS builds";
#endif
    // Prescott (SSE3) runs on every x86-64 CPU and is never what Sextant picks on an AVX2 CPU.
    ProbeRun run = runProbe("OPENBLAS_CORETYPE=Prescott");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    EXPECT_EQ(run.fields["core"], "Prescott") << run.output;
    EXPECT_EQ(run.fields["choice"], "user") << run.output;
    EXPECT_NE(run.fields["describe"].find("OPENBLAS_CORETYPE=Prescott"), std::string::npos)
        << run.output;
    EXPECT_EQ(run.fields["sgemm"], "19 22 43 50") << run.output;
}

TEST(Blas, EmptyCoreTypeCountsAsUnset) {
    ProbeRun run = runProbe("OPENBLAS_CORETYPE=");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    EXPECT_NE(run.fields["choice"], "user") << run.output;
}

TEST(Blas, MissingLibraryIsOneReadableLineAndExit127) {
    ProbeRun run = runProbe("SEXTANT_BLAS_LIBRARY=/nonexistent/libopenblas.so.0");
    EXPECT_EQ(run.exitCode, 127) << run.output;
    EXPECT_EQ(run.output.find("core="), std::string::npos) << "main must not run: " << run.output;
    EXPECT_NE(run.output.find("/nonexistent/libopenblas.so.0"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("libopenblas0"), std::string::npos) << run.output;
    // One line.
    ASSERT_FALSE(run.output.empty());
    EXPECT_EQ(run.output.find('\n'), run.output.size() - 1) << run.output;
}

TEST(Blas, InProcessLoadReportsVersionAndCore) {
    const sextant::ir::blas::Info& info = sextant::ir::blas::info();
    EXPECT_FALSE(info.core.empty());
    EXPECT_FALSE(info.version.empty()) << info.config;
    EXPECT_NE(sextant::ir::blas::describe().find(info.core + " kernels"), std::string::npos)
        << sextant::ir::blas::describe();
}

} // namespace
