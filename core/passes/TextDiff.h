#pragma once

#include <string>
#include <vector>

namespace sextant::passes {

/// One line of a line diff, for views that colour a side-by-side or inline diff.
struct DiffLine {
    enum class Kind { Same, Added, Removed };
    Kind kind = Kind::Same;
    std::string text; ///< the line without its '\n'
    int lineA = 0;    ///< 1-based line in the old text; 0 for Added
    int lineB = 0;    ///< 1-based line in the new text; 0 for Removed
};

/// Splits text into lines on '\n'; a final '\n' does not start an empty last line.
std::vector<std::string> splitLines(const std::string& text);

/// A minimal line diff (Myers' O(ND) algorithm, linear-space variant, after trimming the common
/// prefix and suffix): every line of `a` and `b` once, in order, Removed lines of a change before
/// its Added lines.
std::vector<DiffLine> diffLines(const std::string& a, const std::string& b);

/// A unified diff (`--- nameA`, `+++ nameB`, `@@ -l,n +l,n @@` hunks with `context` lines of
/// context, GNU diff conventions for ranges). Empty when the texts are equal.
std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& nameA,
                        const std::string& nameB, int context = 3);

} // namespace sextant::passes
