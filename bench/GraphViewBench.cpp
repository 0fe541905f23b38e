// GraphView/<what>/N: what the Graph tab does before it shows a generated residual graph of N
// nodes (issue 19 item 4: a 20,000-node model's first graph in <= 5 s).
//
//   flat        the old way: Graphviz dot on the whole graph (graphItems + placeItems) — the
//               baseline, at sizes it finishes in
//   firstLevel  the new way: graphItems, buildHierarchy and the top level placed (what the tab
//               shows first), then one group opened and placed (what a double-click costs)
//   zoom, pan, select
//               what the Graph tab's view does on a wheel step, a drag step and a selection in
//               the level shown (the opened group of the graph of N nodes, the largest scene the
//               tab ever holds), each followed by painting the 1600 x 1000 view offscreen
//               (issue 19 item 4: pan, zoom and select in <= 100 ms)
//
// Counters: boxes placed (the largest single layout) and the groups of the hierarchy.

#include "QtApp.h"
#include "SyntheticGraph.h"

#include "views/GraphHierarchy.h"
#include "views/GraphView.h"

#include <QImage>
#include <QScrollBar>
#include <QWheelEvent>

#include <benchmark/benchmark.h>

#include <map>
#include <memory>


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

/// The view of the first group of the graph of `nodes` nodes (placed once per size).
struct Scene {
    std::shared_ptr<const views::GraphLayoutResult> layout;
    std::unique_ptr<views::GraphView> view;
    QImage image;
};

Scene* sceneFor(int64_t nodes, std::string& error) {
    static std::map<int64_t, std::unique_ptr<Scene>> scenes;
    auto& slot = scenes[nodes];
    if (slot)
        return slot.get();
    const ir::Graph* g = bench::scaleGraph(nodes, false, error);
    if (!g)
        return nullptr;
    views::GraphLayoutResult items = views::graphItems(*g);
    views::GraphHierarchy h = views::buildHierarchy(items);
    auto opened = std::make_shared<views::GraphLayoutResult>(
        views::levelItems(items, h, h.groups.front().groups.empty() ? 0 : h.groups.front().groups.front()));
    if (Status s = views::placeItems(*opened, g->name()); !s.ok()) {
        error = s.error().message;
        return nullptr;
    }
    bench::qtApp();
    slot = std::make_unique<Scene>();
    slot->layout = opened;
    slot->view = std::make_unique<views::GraphView>();
    slot->view->resize(1600, 1000);
    slot->view->setGraphLayout(opened);
    slot->image = QImage(slot->view->size(), QImage::Format_ARGB32_Premultiplied);
    slot->view->QWidget::render(&slot->image);
    return slot.get();
}

enum class Act { Zoom, Pan, Select };

void interact(benchmark::State& state, Act act) {
    std::string error;
    Scene* sc = sceneFor(state.range(0), error);
    if (!sc) {
        state.SkipWithError(("scene failed: " + error).c_str());
        return;
    }
    views::GraphView& v = *sc->view;
    v.fitToView();
    for (int i = 0; i < 3; ++i) { // zoomed in, so that panning moves the scene
        QWheelEvent in(QPointF(800, 500), QPointF(800, 500), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                       Qt::NoScrollPhase, false);
        QApplication::sendEvent(v.viewport(), &in);
    }
    size_t frame = 0;
    for (auto _ : state) {
        ++frame;
        switch (act) {
        case Act::Zoom: {
            const int delta = frame % 2 ? 120 : -120;
            QWheelEvent e(QPointF(800, 500), QPointF(800, 500), QPoint(), QPoint(0, delta), Qt::NoButton,
                          Qt::NoModifier, Qt::NoScrollPhase, false);
            QApplication::sendEvent(v.viewport(), &e);
            break;
        }
        case Act::Pan:
            v.horizontalScrollBar()->setValue(v.horizontalScrollBar()->value() + (frame % 2 ? 40 : -40));
            v.verticalScrollBar()->setValue(v.verticalScrollBar()->value() + (frame % 2 ? 40 : -40));
            break;
        case Act::Select:
            v.selectNode(QString::fromStdString(sc->layout->nodes[frame % sc->layout->nodes.size()].name));
            break;
        }
        v.QWidget::render(&sc->image);
    }
    state.counters["boxes"] = static_cast<double>(sc->layout->nodes.size());
    state.counters["edges"] = static_cast<double>(sc->layout->edges.size());
}

} // namespace

BENCHMARK_CAPTURE(interact, zoom, Act::Zoom)->Name("GraphView/zoom")->Arg(20000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(interact, pan, Act::Pan)->Name("GraphView/pan")->Arg(20000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(interact, select, Act::Select)->Name("GraphView/select")->Arg(20000)->Unit(benchmark::kMillisecond);
BENCHMARK(flatLayout)->Name("GraphView/flat")->Arg(1250)->Arg(2500)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(firstLevel)
    ->Name("GraphView/firstLevel")
    ->Arg(1250)
    ->Arg(2500)
    ->Arg(5000)
    ->Arg(20000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
