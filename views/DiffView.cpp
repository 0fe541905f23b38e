#include "DiffView.h"

#include "core/passes/TextDiff.h"

#include <QFontDatabase>
#include <QTextBlock>
#include <QTextCursor>

#include <vector>

namespace sextant::views {

namespace {

using Kind = passes::DiffLine::Kind;

const QColor kAddedBg(0xdc, 0xf5, 0xdc);
const QColor kRemovedBg(0xfb, 0xdc, 0xdc);
const QColor kFoldBg(0xee, 0xf1, 0xf6);
const QColor kHeaderBg(0xe4, 0xe8, 0xf0);
const QColor kContextFg(0x6a, 0x6a, 0x6a);

} // namespace

DiffView::DiffView(QWidget* parent) : QPlainTextEdit(parent) {
    setReadOnly(true);
    setLineWrapMode(QPlainTextEdit::NoWrap);
    setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    setUndoRedoEnabled(false);
}

void DiffView::setTexts(const std::string& before, const std::string& after, const QString& nameBefore,
                        const QString& nameAfter) {
    m_before = before;
    m_after = after;
    m_nameBefore = nameBefore;
    m_nameAfter = nameAfter;
    render();
}

void DiffView::setContextLines(int lines) {
    if (lines == m_context)
        return;
    m_context = lines;
    render();
}

void DiffView::render() {
    const std::vector<passes::DiffLine> lines = passes::diffLines(m_before, m_after);
    m_added = 0;
    m_removed = 0;
    // Which lines to show: every change, plus m_context lines around it (all when m_context < 0).
    std::vector<char> keep(lines.size(), m_context < 0 ? 1 : 0);
    for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].kind == Kind::Same)
            continue;
        lines[i].kind == Kind::Added ? ++m_added : ++m_removed;
        if (m_context < 0)
            continue;
        const size_t lo = i >= static_cast<size_t>(m_context) ? i - static_cast<size_t>(m_context) : 0;
        const size_t hi = std::min(lines.size(), i + static_cast<size_t>(m_context) + 1);
        for (size_t k = lo; k < hi; ++k)
            keep[k] = 1;
    }

    clear();
    QTextCursor cur(document());
    cur.beginEditBlock();
    bool firstBlock = true;
    auto addLine = [&](const QString& text, const QColor& bg, const QColor& fg, bool italic = false) {
        QTextBlockFormat bf;
        bf.setBackground(bg);
        QTextCharFormat cf;
        cf.setForeground(fg);
        cf.setFontItalic(italic);
        if (firstBlock) {
            cur.setBlockFormat(bf);
            cur.setCharFormat(cf);
            firstBlock = false;
        } else {
            cur.insertBlock(bf, cf);
        }
        cur.insertText(text, cf);
    };

    addLine(QStringLiteral("--- %1   +++ %2   (%3 added, %4 removed)")
                .arg(m_nameBefore, m_nameAfter)
                .arg(m_added)
                .arg(m_removed),
            kHeaderBg, QColor(0x30, 0x30, 0x50));
    if (m_added == 0 && m_removed == 0)
        addLine(tr("%1 left the graph unchanged").arg(m_nameAfter), kFoldBg, kContextFg, true);

    size_t i = 0;
    while (i < lines.size()) {
        if (!keep[i]) {
            size_t j = i;
            while (j < lines.size() && !keep[j])
                ++j;
            addLine(tr("      \u22ef %1 unchanged lines \u22ef").arg(j - i), kFoldBg, kContextFg, true);
            i = j;
            continue;
        }
        const passes::DiffLine& d = lines[i];
        const QString a = d.lineA > 0 ? QString::number(d.lineA).rightJustified(5) : QString(5, ' ');
        const QString b = d.lineB > 0 ? QString::number(d.lineB).rightJustified(5) : QString(5, ' ');
        const QString text = QString::fromStdString(d.text);
        switch (d.kind) {
        case Kind::Same: addLine(a + b + QStringLiteral("    ") + text, Qt::white, kContextFg); break;
        case Kind::Added: addLine(a + b + QStringLiteral("  + ") + text, kAddedBg, QColor(0x0b, 0x4f, 0x1c)); break;
        case Kind::Removed: addLine(a + b + QStringLiteral("  - ") + text, kRemovedBg, QColor(0x7a, 0x12, 0x12)); break;
        }
        ++i;
    }
    cur.endEditBlock();
    moveCursor(QTextCursor::Start);
    // Scroll to the first change so the user lands on what the pass did.
    for (QTextBlock block = document()->begin(); block.isValid(); block = block.next()) {
        const QColor bg = block.blockFormat().background().color();
        if (bg == kAddedBg || bg == kRemovedBg) {
            QTextCursor c(block);
            setTextCursor(c);
            centerCursor();
            break;
        }
    }
}

} // namespace sextant::views
