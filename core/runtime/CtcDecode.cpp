#include "CtcDecode.h"

#include "core/ir/FileRead.h"

#include <sstream>

namespace sextant::runtime {

Expected<std::vector<std::string>> loadCtcAlphabet(const std::string& keysPath) {
    SX_ASSIGN(std::string text, readFileLimited(keysPath, "character list", uint64_t{16} << 20));
    std::istringstream in(text);
    std::vector<std::string> alphabet{""};
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        alphabet.push_back(line);
    }
    if (alphabet.size() == 1)
        return makeError(ErrorKind::Invalid, "character list '" + keysPath + "' is empty");
    alphabet.push_back(" ");
    return alphabet;
}

Expected<std::vector<std::string>> ctcGreedyDecode(const ir::Tensor& scores,
                                                   const std::vector<std::string>& alphabet) {
    const std::vector<int64_t>& shape = scores.shape();
    if (shape.size() != 2 && shape.size() != 3)
        return makeError(ErrorKind::Invalid, "ctc decoding needs scores shaped [N,T,C] or [T,C], got " +
                                                 scores.type().str());
    const int64_t classes = shape.back();
    const int64_t steps = shape[shape.size() - 2];
    const int64_t batch = shape.size() == 3 ? shape[0] : 1;
    if (classes != static_cast<int64_t>(alphabet.size()))
        return makeError(ErrorKind::Invalid, "the scores have " + std::to_string(classes) +
                                                 " classes but the alphabet has " +
                                                 std::to_string(alphabet.size()) +
                                                 " (blank + characters + space)");
    std::vector<std::string> texts;
    for (int64_t b = 0; b < batch; ++b) {
        std::string text;
        int64_t previous = -1;
        for (int64_t t = 0; t < steps; ++t) {
            const int64_t base = (b * steps + t) * classes;
            int64_t best = 0;
            for (int64_t c = 1; c < classes; ++c)
                if (scores.at(base + c) > scores.at(base + best))
                    best = c;
            if (best != 0 && best != previous)
                text += alphabet[static_cast<size_t>(best)];
            previous = best;
        }
        texts.push_back(std::move(text));
    }
    return texts;
}

} // namespace sextant::runtime
