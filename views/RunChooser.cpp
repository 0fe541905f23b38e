#include "RunChooser.h"

#include "profiler/ProfileReader.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QInputDialog>
#include <QtConcurrent/QtConcurrentRun>

#include <vector>

namespace sextant::views {

namespace {

struct ListOutcome {
    QString error;
    std::vector<profiler::RunRow> runs;
};

ListOutcome listRuns(const std::string& db) {
    ListOutcome out;
    auto reader = profiler::ProfileReader::open(db);
    if (!reader.ok()) {
        out.error = QString::fromStdString(reader.error().message);
        return out;
    }
    auto runs = reader->runs();
    if (runs.ok())
        out.runs = std::move(runs).value();
    else
        out.error = QString::fromStdString(runs.error().message);
    return out;
}

/// Which of `runs` to open: -1 for a file of one run, -2 when the user cancelled.
int64_t chooseRun(QWidget* parent, const QString& path, const std::vector<profiler::RunRow>& runs) {
    if (runs.size() <= 1)
        return -1;
    QStringList items;
    for (auto it = runs.rbegin(); it != runs.rend(); ++it)
        items << QObject::tr("run %1 · %2 · %3")
                     .arg(it->id)
                     .arg(QFileInfo(QString::fromStdString(it->model)).fileName(),
                          QString::fromStdString(it->target));
    bool ok = false;
    const QString chosen =
        QInputDialog::getItem(parent, QObject::tr("Which run?"),
                              QObject::tr("%1 holds %2 runs:").arg(path).arg(runs.size()), items,
                              0, false, &ok);
    if (!ok)
        return -2;
    return runs[runs.size() - 1 - static_cast<size_t>(items.indexOf(chosen))].id;
}

} // namespace

void askForRun(QWidget* parent, const QString& title, RunChoice choice) {
    const QString path = QFileDialog::getOpenFileName(
        parent, title, QString(), QObject::tr("Profile databases (*.db);;All files (*)"));
    if (path.isEmpty())
        return;
    if (choice.busy)
        choice.busy(true);
    auto* watcher = new QFutureWatcher<ListOutcome>(parent);
    QObject::connect(watcher, &QFutureWatcher<ListOutcome>::finished, parent,
                     [parent, watcher, path, choice] {
                         const ListOutcome out = watcher->result();
                         watcher->deleteLater();
                         if (choice.busy)
                             choice.busy(false);
                         if (!out.error.isEmpty()) {
                             if (choice.failed)
                                 choice.failed(out.error);
                             return;
                         }
                         const int64_t run = chooseRun(parent, path, out.runs);
                         if (run != -2)
                             choice.open(path, run);
                     });
    watcher->setFuture(QtConcurrent::run([db = path.toStdString()] { return listRuns(db); }));
}

} // namespace sextant::views
