// sextant-cli plan-offsets FILE.csv... [--out PLAN.csv] [--steps N] [--capacity BYTES] [--align BYTES]
// Plans offset-assignment problems in the MiniMalloc CSV format (id,lower,upper,size), one line per
// file, so that the planner can be checked against published instances and their figures.
#include "Commands.h"

#include "core/backend/MemoryPlanner.h"
#include "core/ir/FileWrite.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace sextant::cli {

namespace {

const char* kPlanOffsetsUsage =
    "usage: sextant-cli plan-offsets FILE.csv... [--out PLAN.csv] [--steps N] [--capacity BYTES] [--align BYTES]\n"
    "\n"
    "Places the buffers of each file (CSV with the header id,lower,upper,size: a buffer live over\n"
    "[lower, upper) needing size bytes) in one address space, two buffers sharing addresses only\n"
    "when their lifetimes do not meet. MiniMalloc's spellings begin/start, end (inclusive) and\n"
    "buffer_id, and its alignment column, are read too. An optional conflicts column (as\n"
    "'compile --export-offset-problem' writes it) names, space-separated, the ids of rows the buffer\n"
    "must not share addresses with although the lifetimes do not meet. Prints one line per file:\n"
    "  FILE: buffers N, max-live M, peak P (R x), optimal yes|no, T s\n"
    "max-live is the most bytes live at one time (no plan needs less); optimal says whether the\n"
    "peak is proven the least possible. With a conflicts column, a second line gives the pairs it\n"
    "lists and the lower bound, which also counts buffers that all conflict with each other.\n"
    "  --out PLAN.csv    write the plan (the input's columns and an offset column; one input only)\n"
    "  --steps N         search steps per file (default 800000000, under a second here; 0:\n"
    "                    heuristics only). The same file and steps give the same plan on every machine\n"
    "  --capacity BYTES  the plan must fit in BYTES: exit status 1 when it cannot\n"
    "  --align BYTES     every offset a multiple of BYTES (default 1)\n";

struct PlanOptions {
    std::vector<std::string> files;
    std::string out;
    backend::OffsetSearchOptions search;
    uint64_t alignment = 1;
};

/// Reads a byte count or step count option's value at args[i + 1].
std::optional<uint64_t> numberAfter(Args args, size_t& i, const std::string& name, std::string& error) {
    if (i + 1 >= args.size()) {
        error = "plan-offsets: " + name + " needs a number";
        return std::nullopt;
    }
    const std::string v = args[++i];
    const std::optional<int64_t> n = parseWholeNumber(v);
    if (!n) {
        error = "plan-offsets: " + name + " '" + v + "' is not a whole number";
        return std::nullopt;
    }
    return static_cast<uint64_t>(*n);
}

int writePlan(const std::string& path, const std::vector<backend::IntervalBuffer>& buffers,
              const backend::OffsetPlan& plan) {
    Expected<PendingFile> file = PendingFile::open(path, "plan");
    Status written = file.ok() ? Status{} : Status(file.error());
    if (file.ok()) {
        std::ostream& out = file->stream();
        // The alignment column when the input had one (so that the plan reads back as the same
        // problem); lifetimes as [lower, upper) whatever the input's spelling.
        // The same goes for the conflicts column.
        const bool aligned = std::any_of(buffers.begin(), buffers.end(),
                                         [](const backend::IntervalBuffer& b) { return b.alignment != 1; });
        const bool beyond = backend::hasConflictsBeyondLifetimes(buffers);
        out << "id,lower,upper,size" << (aligned ? ",alignment" : "") << (beyond ? ",conflicts" : "") << ",offset\n";
        for (size_t i = 0; i < buffers.size(); ++i) {
            out << buffers[i].id << ',' << buffers[i].lower << ',' << buffers[i].upper << ',' << buffers[i].size;
            if (aligned)
                out << ',' << buffers[i].alignment;
            if (beyond) {
                out << ',';
                for (size_t k = 0; k < buffers[i].conflicts.size(); ++k)
                    out << (k ? " " : "") << buffers[buffers[i].conflicts[k]].id;
            }
            out << ',' << plan.offsets[i] << '\n';
        }
        written = file->commit();
    }
    if (!written.ok())
        return fail("plan-offsets: " + written.error().message);
    return 0;
}

/// Plans one file and prints its line. 0 planned, 1 over the capacity, 2 bad input.
int planFile(const std::string& file, const PlanOptions& o) {
    Expected<std::vector<backend::IntervalBuffer>> buffers = backend::readIntervalCsv(file);
    if (!buffers.ok())
        return fail(buffers.error().message);
    // One alignment for the whole plan: the buffers' own (an alignment column) and --align.
    const Expected<uint64_t> alignment = backend::commonAlignment(*buffers, o.alignment);
    if (!alignment.ok())
        return fail(file + ": " + alignment.error().message);
    const auto [least, most] = std::minmax_element(
        buffers->begin(), buffers->end(),
        [](const backend::IntervalBuffer& a, const backend::IntervalBuffer& b) { return a.alignment < b.alignment; });
    if (least != buffers->end() && least->alignment != most->alignment)
        std::cout << file << ": alignments from " << least->alignment << " to " << most->alignment
                  << " bytes: every buffer placed at a multiple of " << *alignment << "\n";
    // The time printed is the planning's: listing the conflicts, the heuristics and the search.
    const auto start = std::chrono::steady_clock::now();
    const backend::OffsetProblem problem = backend::problemFromIntervals(*buffers, *alignment);
    const bool beyond = backend::hasConflictsBeyondLifetimes(*buffers);
    if (beyond && problem.overlapsOnly)
        return fail(file + ": more than " + std::to_string(backend::kMaxListedPairs) +
                    " pairs of buffers overlap in time, too many to list beside the conflicts column");
    const backend::OffsetPlan plan = backend::planOffsets(problem, o.search);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Status valid = backend::checkOffsetPlan(problem, plan);
    if (!valid.ok())
        return fail(file + ": the planner's plan is invalid (a bug): " + valid.error().message);
    const uint64_t maxLive = backend::maxLiveBytes(*buffers);
    char line[256];
    std::snprintf(line, sizeof line, "buffers %zu, max-live %llu, peak %llu (%.3f x), optimal %s, %.2f s",
                  buffers->size(), static_cast<unsigned long long>(maxLive),
                  static_cast<unsigned long long>(plan.peak),
                  maxLive ? static_cast<double>(plan.peak) / static_cast<double>(maxLive) : 1.0,
                  plan.optimal ? "yes" : "no", seconds);
    std::cout << file << ": " << line << "\n";
    if (beyond) { // max-live is no bound then: buffers apart in time may conflict
        size_t pairs = 0;
        for (const backend::IntervalBuffer& b : *buffers)
            pairs += b.conflicts.size();
        std::snprintf(line, sizeof line, "conflicts beyond the lifetimes %zu, lower bound %llu (%.3f x)", pairs,
                      static_cast<unsigned long long>(plan.lowerBound),
                      plan.lowerBound ? static_cast<double>(plan.peak) / static_cast<double>(plan.lowerBound) : 1.0);
        std::cout << file << ": " << line << "\n";
    }
    if (!o.out.empty())
        if (int rc = writePlan(o.out, *buffers, plan))
            return rc;
    if (!plan.fitsCapacity) {
        std::cout << file << ": does not fit the capacity " << o.search.capacity << ": the best plan found needs "
                  << plan.peak << " bytes, and no plan needs less than " << plan.lowerBound << "\n";
        return 1;
    }
    return 0;
}

} // namespace

int cmdPlanOffsets(Args args) {
    PlanOptions o;
    std::string error;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            std::cout << kPlanOffsetsUsage;
            return 0;
        }
        if (a == "--out" || a == "-o") {
            if (i + 1 >= args.size())
                return fail("plan-offsets: " + a + " needs a file");
            o.out = args[++i];
        } else if (a == "--steps" || a == "--capacity" || a == "--align") {
            const std::optional<uint64_t> v = numberAfter(args, i, a, error);
            if (!v)
                return fail(error);
            if (a == "--steps")
                o.search.steps = *v;
            else if (a == "--capacity")
                o.search.capacity = *v;
            else
                o.alignment = std::max<uint64_t>(*v, 1);
        } else if (!a.empty() && a[0] == '-') {
            return fail("plan-offsets: unknown option '" + a + "' (see 'sextant-cli plan-offsets --help')");
        } else {
            o.files.push_back(a);
        }
    }
    if (o.files.empty())
        return fail("plan-offsets: no CSV file given (usage: sextant-cli plan-offsets FILE.csv...)");
    if (!o.out.empty() && o.files.size() != 1)
        return fail("plan-offsets: --out writes the plan of one file; " + std::to_string(o.files.size()) +
                    " were given");
    int status = 0;
    for (const std::string& f : o.files)
        status = std::max(status, planFile(f, o));
    return status;
}

} // namespace sextant::cli
