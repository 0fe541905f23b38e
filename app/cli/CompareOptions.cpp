#include "CompareOptions.h"

#include "ShapeOption.h"

namespace sextant::cli {

bool parseCompareOption(const std::string& command, Args args, size_t& i, CompareOptions& out,
                        std::string& error) {
    const std::string& a = args[i];
    if (a != "--inputs" && a != "--expected" && a != "--atol" && a != "--rtol" && a != "--shape")
        return false;
    if (i + 1 >= args.size()) {
        error = command + ": " + a +
                (a == "--shape"                             ? " needs NAME=DIMS (e.g. x=1x3x48x320)"
                 : a == "--inputs" || a == "--expected" ? " needs a directory"
                                                        : " needs a number");
        return true;
    }
    const std::string& v = args[++i];
    if (a == "--inputs") {
        out.inputsDir = v;
    } else if (a == "--expected") {
        out.expectedDir = v;
    } else if (a == "--shape") {
        error = addShapeOption(command, v, out.shapes);
    } else {
        std::optional<double> t = parseTolerance(v);
        if (!t)
            error = command + ": " + a + " '" + v + "' is not a non-negative number";
        else
            (a == "--atol" ? out.atol : out.rtol) = *t;
    }
    return true;
}

} // namespace sextant::cli
