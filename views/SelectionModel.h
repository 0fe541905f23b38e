#pragma once

#include <QObject>
#include <QString>

namespace sextant::views {

/// The one selection every view shares: the name of the selected IR node (empty for none).
/// Views call select() when the user clicks something and listen to nodeSelected() to follow;
/// selecting the node that is already selected emits nothing, so views cannot ping-pong.
class SelectionModel : public QObject {
    Q_OBJECT
public:
    explicit SelectionModel(QObject* parent = nullptr) : QObject(parent) {}

    const QString& selectedNode() const { return m_node; }

    /// Selects `node` (an IR node name of the graph being shown, or empty to clear).
    void select(const QString& node);
    void clear() { select(QString()); }

signals:
    /// The selection changed to `node` (empty: nothing selected).
    void nodeSelected(const QString& node);

private:
    QString m_node;
};

} // namespace sextant::views
