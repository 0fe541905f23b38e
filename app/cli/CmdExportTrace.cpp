// sextant-cli export-trace DB -o FILE.json [--run N]
// Writes one run of a profile database as Chrome Trace Event JSON (Perfetto, chrome://tracing).
#include "Commands.h"

#include "profiler/ChromeTrace.h"

#include <iostream>
#include <string>

namespace sextant::cli {

namespace {

const char* kExportUsage =
    "usage: sextant-cli export-trace DB -o FILE.json [--run N]\n"
    "\n"
    "Exports a run of a profile database (written by 'run --profile') as Chrome Trace Event JSON:\n"
    "one slice per Task over its compute (process = core, thread = unit), its DMA loads, stores\n"
    "and double-buffered streams on the core's own 'core N dma' thread beside it, and a flow\n"
    "arrow per dependency.\n"
    "  -o FILE.json   where to write the trace\n"
    "  --run N        which run (default: the latest)\n";

} // namespace

int cmdExportTrace(Args args) {
    std::string db, out;
    int64_t run = -1;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            std::cout << kExportUsage;
            return 0;
        }
        if (a == "-o" || a == "--output") {
            if (i + 1 >= args.size())
                return fail("export-trace: " + a + " needs a file");
            out = args[++i];
        } else if (a == "--run") {
            if (i + 1 >= args.size())
                return fail("export-trace: --run needs a run id");
            const std::string v = args[++i];
            const std::optional<int64_t> n = parseWholeNumber(v);
            if (!n || *n < 1)
                return fail("export-trace: --run '" + v + "' is not a run id (1, 2, ...)");
            run = *n;
        } else if (!a.empty() && a[0] == '-') {
            return fail("export-trace: unknown option '" + a +
                        "' (see 'sextant-cli export-trace --help')");
        } else if (db.empty()) {
            db = a;
        } else {
            return fail("export-trace: more than one database given ('" + db + "' and '" + a +
                        "')");
        }
    }
    if (db.empty())
        return fail("export-trace: no profile database given (usage: sextant-cli export-trace DB "
                    "-o FILE.json)");
    if (out.empty())
        return fail("export-trace: no output file given (-o FILE.json)");
    Status s = profiler::exportChromeTrace(db, out, run);
    if (!s.ok())
        return fail(s.error().message);
    std::cout << "wrote " << out << "\n";
    return 0;
}

} // namespace sextant::cli
