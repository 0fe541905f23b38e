#include "InputShapesDialog.h"

#include <QCoreApplication>
#include <QInputDialog>
#include <QLineEdit>

namespace sextant::views {

std::optional<ir::InputShapes> askInputShapes(QWidget* parent, const ir::InputShapes& current,
                                              QString* error) {
    auto tr = [](const char* text) {
        return QCoreApplication::translate("InputShapesDialog", text);
    };
    bool ok = false;
    const QString text = QInputDialog::getText(
        parent, tr("Input shapes"),
        tr("Concrete dims for inputs with symbolic ones, NAME=DIMS separated by spaces\n"
           "(e.g. x=1x3x640x640). Empty: the shapes of the model's test inputs."),
        QLineEdit::Normal, QString::fromStdString(ir::formatShapeList(current)), &ok);
    if (!ok)
        return std::nullopt;
    Expected<ir::InputShapes> parsed = ir::parseShapeList(text.toStdString());
    if (!parsed.ok()) {
        *error = tr("input shapes: %1").arg(QString::fromStdString(parsed.error().message));
        return std::nullopt;
    }
    return std::move(parsed).value();
}

} // namespace sextant::views
