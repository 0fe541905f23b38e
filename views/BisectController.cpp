#include "BisectController.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace sextant::views {

QString bisectVerdict(const runtime::BisectOutcome& outcome, int optLevel) {
    switch (outcome.kind) {
    case runtime::BisectOutcome::Kind::NoDrift:
        return BisectController::tr("bisect: no drift at -O%1: with all %2 rule applications the "
                                    "outputs stay within tolerance")
            .arg(optLevel)
            .arg(outcome.applications);
    case runtime::BisectOutcome::Kind::DriftWithoutRules:
        return BisectController::tr(
            "bisect: out of tolerance with no rule applied: the drift is not a rule application's");
    case runtime::BisectOutcome::Kind::Culprit:
        return BisectController::tr("bisect: first bad application #%1 %2 (pass %3) at node '%4'")
            .arg(outcome.culprit.seq)
            .arg(QString::fromStdString(outcome.culprit.rule),
                 QString::fromStdString(outcome.culprit.pass),
                 QString::fromStdString(outcome.culprit.node));
    }
    return {};
}

BisectController::BisectController(QObject* parent) : QObject(parent) {
    m_watcher = new QFutureWatcher<Done>(this);
    connect(m_watcher, &QFutureWatcher<Done>::finished, this, &BisectController::onDone);
}

BisectController::~BisectController() {
    cancel();
    m_watcher->waitForFinished(); // its probes report to this object
}

bool BisectController::isRunning() const {
    return m_watcher->isRunning();
}

void BisectController::cancel() {
    if (m_cancel)
        m_cancel->store(true);
}

bool BisectController::clearLimit() {
    if (m_limit < 0)
        return false;
    m_limit = -1;
    return true;
}

bool BisectController::start(const CompileRequest& compile) {
    if (isRunning())
        return false;
    CompileRequest request = compile;
    request.pipeline.bisectLimit = -1; // the search sets it
    const int level = request.pipeline.optLevel;
    const QString path = QString::fromStdString(request.modelPath);
    emit busyChanged(true);
    emit status(tr("bisecting %1 at -O%2").arg(QFileInfo(path).fileName()).arg(level));
    emit message(
        tr("— bisect %1 at -O%2: the optimised graph on the float64 reference executor against the "
           "imported model's")
            .arg(path)
            .arg(level));
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    // The pool thread reports each probe through a queued call on this object; the destructor
    // waits for the thread, and Qt drops calls to an object that is gone.
    QPointer<BisectController> self(this);
    m_watcher->setFuture(QtConcurrent::run([request, cancel = m_cancel, self, level,
                                            tolerance = m_tolerance]() {
        auto onProbe = [self](const runtime::BisectProbe& p) {
            const QString line =
                p.limit < 0
                    ? QStringLiteral("  all %1 applications: %2")
                          .arg(p.applications.size())
                          .arg(p.pass ? "PASS" : "FAIL")
                    : QStringLiteral("  limit %1: %2").arg(p.limit).arg(p.pass ? "PASS" : "FAIL");
            QMetaObject::invokeMethod(
                self,
                [self, line] {
                    if (self)
                        emit self->message(line);
                },
                Qt::QueuedConnection);
        };
        Done done;
        done.optLevel = level;
        Expected<runtime::BisectOutcome> r = bisectModel(request, cancel.get(), onProbe, tolerance);
        if (r.ok())
            done.outcome = std::move(r).value();
        else if (r.error().kind == ErrorKind::Cancelled)
            done.cancelled = true;
        else
            done.error = QString::fromStdString(r.error().message);
        return done;
    }));
    return true;
}

void BisectController::onDone() {
    const Done done = m_watcher->result();
    emit busyChanged(false);
    if (done.cancelled) {
        emit cancelled();
        return;
    }
    if (!done.outcome) {
        emit failed(tr("bisect: %1").arg(done.error));
        return;
    }
    const runtime::BisectOutcome& r = *done.outcome;
    for (const runtime::TensorComparison& c : r.bad.comparisons)
        emit message(QStringLiteral("  ") + QString::fromStdString(runtime::formatComparison(c)));
    const QString verdict = bisectVerdict(r, done.optLevel);
    emit message(verdict);
    emit status(verdict);
    const bool culprit = r.kind == runtime::BisectOutcome::Kind::Culprit;
    if (culprit) {
        m_limit = r.culprit.seq;
        m_culprit = r.culprit;
    }
    emit finished(verdict, culprit);
}

} // namespace sextant::views
