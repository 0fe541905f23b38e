// blas-probe: prints what core/ir/Blas.cpp loaded, one key=value per line, and the result of one
// small sgemm. tests/ir/BlasTest.cpp runs it as a child process with chosen environments (the
// kernel choice happens once per process, before main, so it cannot be varied in-process).

#include "core/ir/Blas.h"

#include <cstdio>

int main() {
    using namespace sextant::ir;
    const blas::Info& i = blas::info();
    const char* choice = i.choice == blas::CoreChoice::User      ? "user"
                         : i.choice == blas::CoreChoice::Sextant ? "sextant"
                                                                  : "openblas";
    std::printf("core=%s\nchoice=%s\nrequested=%s\nversion=%s\n", i.core.c_str(), choice,
                i.requested.c_str(), i.version.c_str());
    std::printf("describe=%s\n", blas::describe().c_str());
    // [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50]
    const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    float c[4] = {};
    blas::sgemm(false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
    std::printf("sgemm=%g %g %g %g\n", c[0], c[1], c[2], c[3]);
    return 0;
}
