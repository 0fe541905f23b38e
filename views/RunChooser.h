#pragma once

#include <QString>

#include <cstdint>
#include <functional>

class QWidget;

namespace sextant::views {

/// What askForRun calls back.
struct RunChoice {
    /// The user chose run `run` of `path` (-1: the file holds one run, the newest).
    std::function<void(const QString& path, int64_t run)> open;
    /// The file could not be read: the reason, naming it.
    std::function<void(const QString& message)> failed;
    /// True while the file's runs are being listed, false once done (may be empty).
    std::function<void(bool)> busy;
};

/// File ▸ Open profile database…: asks for a database (a file dialog titled `title`), lists its
/// runs on a pool thread, asks which one when it holds several (newest first), then calls
/// `choice.open`. Nothing is called when the user cancels a dialog.
void askForRun(QWidget* parent, const QString& title, RunChoice choice);

} // namespace sextant::views
