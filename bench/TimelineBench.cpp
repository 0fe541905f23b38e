// Timeline/... : what one frame of the Timeline tab costs on a run of 1,000,000 Tasks (8 cores x
// cube, vector and DMA lanes; bench/SyntheticRun.h), issue 19 item 5 (<= 4 ms at whole-run, 10 %
// and 1 % zoom). The critical path marks every Task of core 0 (125,000 Tasks), so its overlay
// costs what a long one does.
//
//   Timeline/DrawList/<zoom>        TimelineModel::buildDrawList + buildSpanList: the level of
//                                   detail (folds found by binary search over each lane)
//   Timeline/DrawListByScan/<zoom>  the same lists by the walk over every Task in view that the
//                                   timeline used before: the baseline, in the same run
//   Timeline/Paint/<zoom>           TimelineView painting itself (axis, lanes, items, overlay)
//                                   into a 1600 x 800 image, offscreen
//   Timeline/HitTest/<zoom>         a tooltip's hit test after the frame was painted
//   Timeline/TasksOfNode            the Tasks of one node by exact name (what selecting a node in
//                                   the graph costs): the baseline for the find box
//   Timeline/Find/<query>           TimelineModel::findTasks (the find box, on a pool thread):
//                                   "op123456[" (8 matches), "op1234" (888), "conv" (333,334)
//   Timeline/FindStep/<query>       what the GUI thread does when the matches come and Enter is
//                                   pressed: outline them (at most 5,000), focus the first
//   Timeline/OutlineMarks/<query>   the outline's marks from the matches' indices (marksOf), and
//   Timeline/OutlineMarksByFlags/<query>  what every change of the outline cost before: a flag
//                                   per Task (marks) and the critical path's marks rebuilt from
//                                   its Task ids: the baseline, in the same run
//
// <zoom> is the visible share of the run in per mille: 1000 (all of it), 100 (10 %), 10 (1 %),
// centred on the middle of the run.

#include "QtApp.h"
#include "SyntheticRun.h"

#include "views/TimelineModel.h"
#include "views/TimelineView.h"

#include <QApplication>
#include <QImage>
#include <QPainter>

#include <benchmark/benchmark.h>

#include <memory>

using namespace sextant;

namespace {

constexpr int kTasks = 1000000;
constexpr double kWidthPx = 1600.0 - 118.0 - 8.0; // the view's data area at 1600 px

struct Fixture {
    std::shared_ptr<views::TimelineModel> model = std::make_shared<views::TimelineModel>();
    std::vector<uint8_t> critical; ///< per Task index: on the critical path
    views::TimelineMarks criticalMarks;
    std::set<int> criticalIds;
};

const Fixture& fixture() {
    static const Fixture f = [] {
        Fixture x;
        x.model->setTasks(views::timelineTasks(bench::syntheticTaskRows(kTasks)), 8);
        const auto& tasks = x.model->tasks();
        x.critical.assign(tasks.size(), 0);
        for (size_t i = 0; i < tasks.size(); ++i)
            if (tasks[i].core == 0) {
                x.critical[i] = 1;
                x.criticalIds.insert(tasks[i].task);
            }
        x.criticalMarks = x.model->marks(x.critical, false);
        return x;
    }();
    return f;
}

views::TimelineCoords coordsFor(const views::TimelineModel& m, int perMille) {
    const double total = static_cast<double>(m.totalCycles());
    const double span = total * perMille / 1000.0;
    views::TimelineCoords c;
    c.fit(total / 2 - span / 2, total / 2 + span / 2, kWidthPx, 6.0);
    return c;
}

void drawList(benchmark::State& state) {
    const Fixture& f = fixture();
    const views::TimelineCoords c = coordsFor(*f.model, static_cast<int>(state.range(0)));
    size_t items = 0;
    for (auto _ : state) {
        auto draw = f.model->buildDrawList(c, kWidthPx, 3.0, views::TimelineMarks{});
        auto spans = f.model->buildSpanList(c, kWidthPx, f.criticalMarks);
        items = draw.size() + spans.size();
        benchmark::DoNotOptimize(items);
    }
    state.counters["items"] = static_cast<double>(items);
}

void drawListByScan(benchmark::State& state) {
    const Fixture& f = fixture();
    const views::TimelineCoords c = coordsFor(*f.model, static_cast<int>(state.range(0)));
    size_t items = 0;
    for (auto _ : state) {
        auto draw = f.model->buildDrawListByScan(c, kWidthPx, 3.0);
        auto spans = f.model->buildSpanListByScan(c, kWidthPx, f.critical);
        items = draw.size() + spans.size();
        benchmark::DoNotOptimize(items);
    }
    state.counters["items"] = static_cast<double>(items);
}

QApplication& app() { return bench::qtApp(); }

/// A TimelineView on the fixture at `perMille` zoom, painted once.
std::unique_ptr<views::TimelineView> viewAt(int perMille, QImage& image) {
    app();
    const Fixture& f = fixture();
    auto view = std::make_unique<views::TimelineView>();
    view->resize(1600, 800);
    view->setModel(f.model, 1.0);
    view->setCriticalTasks(f.criticalIds);
    view->setCoords(coordsFor(*f.model, perMille));
    image = QImage(view->size(), QImage::Format_ARGB32_Premultiplied);
    view->render(&image);
    return view;
}

void paint(benchmark::State& state) {
    QImage image;
    auto view = viewAt(static_cast<int>(state.range(0)), image);
    int frame = 0;
    for (auto _ : state) {
        // A pan of one pixel each frame, as a drag does: the draw list is rebuilt every time.
        views::TimelineCoords c = view->coords();
        c.panByPixels((frame++ % 2) ? 1.0 : -1.0);
        view->setCoords(c);
        view->render(&image);
    }
    state.counters["draw_lists"] = view->drawListBuilds();
}

void hitTest(benchmark::State& state) {
    QImage image;
    auto view = viewAt(static_cast<int>(state.range(0)), image);
    int x = 118;
    for (auto _ : state) {
        x = x >= 1500 ? 118 : x + 7;
        benchmark::DoNotOptimize(view->toolTipAt(QPoint(x, 44)));
    }
    state.counters["draw_lists"] = view->drawListBuilds(); // 1: the painted one
}

void tasksOfNode(benchmark::State& state) {
    const Fixture& f = fixture();
    for (auto _ : state)
        benchmark::DoNotOptimize(f.model->tasksOfNode("op123456"));
}

const char* const kQueries[] = {"op123456[", "op1234", "conv"};

void find(benchmark::State& state) {
    const Fixture& f = fixture();
    size_t hits = 0;
    for (auto _ : state) {
        std::vector<int> found = f.model->findTasks(kQueries[state.range(0)]);
        hits = found.size();
        benchmark::DoNotOptimize(found);
    }
    state.counters["matches"] = static_cast<double>(hits);
}

void findStep(benchmark::State& state) {
    QImage image;
    auto view = viewAt(1000, image);
    const std::vector<int> found = fixture().model->findTasks(kQueries[state.range(0)]);
    for (auto _ : state) {
        view->focusTask(-1);
        view->highlightTasks(found);
        view->focusTask(found.front());
    }
    state.counters["outlined"] = static_cast<double>(view->highlighted().size());
}

void outlineMarks(benchmark::State& state) {
    const Fixture& f = fixture();
    const std::vector<int> found = f.model->findTasks(kQueries[state.range(0)]);
    for (auto _ : state)
        benchmark::DoNotOptimize(f.model->marksOf(found, true));
}

void outlineMarksByFlags(benchmark::State& state) {
    const Fixture& f = fixture();
    const std::vector<int> found = f.model->findTasks(kQueries[state.range(0)]);
    for (auto _ : state) {
        std::vector<uint8_t> flags(f.model->tasks().size(), 0);
        for (int i : found)
            flags[static_cast<size_t>(i)] = 1;
        benchmark::DoNotOptimize(f.model->marks(flags, true));
        std::vector<uint8_t> critical(f.model->tasks().size(), 0);
        for (size_t i = 0; i < critical.size(); ++i)
            critical[i] = f.criticalIds.count(f.model->tasks()[i].task) != 0;
        benchmark::DoNotOptimize(f.model->marks(critical, false));
    }
}

} // namespace

BENCHMARK(outlineMarks)->Name("Timeline/OutlineMarks")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(outlineMarksByFlags)->Name("Timeline/OutlineMarksByFlags")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(tasksOfNode)->Name("Timeline/TasksOfNode")->Unit(benchmark::kMillisecond);
BENCHMARK(find)->Name("Timeline/Find")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(findStep)->Name("Timeline/FindStep")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(drawList)->Name("Timeline/DrawList")->Arg(1000)->Arg(100)->Arg(10)->Unit(benchmark::kMillisecond);
BENCHMARK(drawListByScan)->Name("Timeline/DrawListByScan")->Arg(1000)->Arg(100)->Arg(10)->Unit(benchmark::kMillisecond);
BENCHMARK(paint)->Name("Timeline/Paint")->Arg(1000)->Arg(100)->Arg(10)->Unit(benchmark::kMillisecond);
BENCHMARK(hitTest)->Name("Timeline/HitTest")->Arg(1000)->Arg(100)->Arg(10)->Unit(benchmark::kMicrosecond);
