#pragma once

// CSV fields as RFC 4180 writes them, for the exports (memory plan, summary).

#include <string>

namespace sextant {

/// `s` as is, or quoted with inner quotes doubled when it holds a comma, quote or line break.
inline std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

} // namespace sextant
