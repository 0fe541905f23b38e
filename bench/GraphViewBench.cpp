// GraphView/<what>/N: what the Graph tab does before it shows a generated residual graph of N
// nodes (issue 19 item 4: a 20,000-node model's first graph in <= 5 s).
//
//   flat        the old way: Graphviz dot on the whole graph (graphItems + placeItems) — the
//               baseline, at sizes it finishes in
//   firstLevel  the new way: graphItems, buildHierarchy and the top level placed (what the tab
//               shows first), then one group opened and placed (what a double-click costs)
//
// Counters: boxes placed (the largest single layout) and the groups of the hierarchy.

#include "SyntheticGraph.h"

#include "views/GraphHierarchy.h"

#include <benchmark/benchmark.h>


using namespace sextant;

namespace {

void flatLayout(benchmark::State& state) {
    std::string error;
    const ir::Graph* g = bench::scaleGraph(state.range(0), false, error);
    if (!g) {
        state.SkipWithError(("generator failed: " + error).c_str());
        return;
    }
    size_t boxes = 0;
    for (auto _ : state) {
        auto laid = views::layoutGraph(*g);
        if (!laid.ok()) {
            state.SkipWithError(laid.error().message.c_str());
            return;
        }
        boxes = laid->nodes.size();
    }
    state.counters["largest_layout"] = static_cast<double>(boxes);
}

void firstLevel(benchmark::State& state) {
    std::string error;
    const ir::Graph* g = bench::scaleGraph(state.range(0), false, error);
    if (!g) {
        state.SkipWithError(("generator failed: " + error).c_str());
        return;
    }
    size_t largest = 0, groups = 0;
    for (auto _ : state) {
        views::GraphLayoutResult items = views::graphItems(*g);
        views::GraphHierarchy h = views::buildHierarchy(items);
        views::GraphLayoutResult top = views::levelItems(items, h, 0);
        views::GraphLayoutResult opened =
            views::levelItems(items, h, h.groups.front().groups.empty() ? 0 : h.groups.front().groups.front());
        for (views::GraphLayoutResult* level : {&top, &opened})
            if (Status s = views::placeItems(*level, g->name()); !s.ok()) {
                state.SkipWithError(s.error().message.c_str());
                return;
            }
        largest = std::max(top.nodes.size(), opened.nodes.size());
        groups = h.groups.size();
    }
    state.counters["largest_layout"] = static_cast<double>(largest);
    state.counters["groups"] = static_cast<double>(groups);
}

} // namespace

BENCHMARK(flatLayout)->Name("GraphView/flat")->Arg(1250)->Arg(2500)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(firstLevel)
    ->Name("GraphView/firstLevel")
    ->Arg(1250)
    ->Arg(2500)
    ->Arg(5000)
    ->Arg(20000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
