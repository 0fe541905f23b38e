#pragma once

// The one QApplication a benchmark process may have, made on first use (offscreen), shared by
// every benchmark that draws a view.

#include <QApplication>

namespace sextant::bench {

inline QApplication& qtApp() {
    static QApplication* app = [] {
        if (auto* existing = qobject_cast<QApplication*>(QCoreApplication::instance()))
            return existing;
        qputenv("QT_QPA_PLATFORM", "offscreen");
        static int argc = 1;
        static char name[] = "sextant-bench";
        static char* argv[] = {name, nullptr};
        return new QApplication(argc, argv);
    }();
    return *app;
}

} // namespace sextant::bench
