// NameIndex, the graph's name -> node/value table: checked against std::map over a long random
// sequence of inserts, renames and erases (so probe runs wrap around the end of the array and
// erasing shifts later members back), since every Graph::findNode/findValue goes through it.
#include "core/ir/NameIndex.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace sextant::ir {
namespace {

struct Named {
    std::string n;
    const std::string& name() const { return n; }
};

TEST(NameIndex, AgreesWithAMapOverRandomInsertsRenamesAndErases) {
    std::mt19937 rng(1234);
    std::vector<std::unique_ptr<Named>> objects;
    NameIndex<Named> index;
    std::map<std::string, Named*> reference;
    auto name = [&] { return "v" + std::to_string(rng() % 3000); };
    for (int step = 0; step < 60000; ++step) {
        const unsigned op = rng() % 10;
        if (op < 5) { // insert (replaces an object of the same name, as Graph relied on)
            objects.push_back(std::make_unique<Named>(Named{name()}));
            index.insert(objects.back().get());
            reference[objects.back()->n] = objects.back().get();
        } else if (op < 8) { // erase by name, present or not
            const std::string k = name();
            index.erase(k);
            reference.erase(k);
        } else if (!reference.empty()) { // rename: erase, change the name, insert again
            auto it = reference.begin();
            std::advance(it, static_cast<long>(rng() % reference.size()));
            Named* o = it->second;
            const std::string to = name();
            if (reference.count(to))
                continue;
            index.erase(o->n);
            reference.erase(it);
            o->n = to;
            index.insert(o);
            reference[to] = o;
        }
        if (step % 97 == 0) {
            ASSERT_EQ(index.size(), reference.size()) << "step " << step;
            for (int k = 0; k < 3000; k += 7) {
                const std::string key = "v" + std::to_string(k);
                auto it = reference.find(key);
                ASSERT_EQ(index.find(key), it == reference.end() ? nullptr : it->second)
                    << key << " at step " << step;
            }
        }
    }
    for (const auto& [k, o] : reference)
        EXPECT_EQ(index.find(k), o) << k;
    EXPECT_EQ(index.find("absent"), nullptr);
}

TEST(NameIndex, EmptyAndReserved) {
    NameIndex<Named> index;
    EXPECT_EQ(index.find("x"), nullptr);
    index.erase("x"); // nothing to erase: no effect
    index.reserve(1000);
    Named a{"a"}, b{"b"};
    index.insert(&a);
    index.insert(&b);
    EXPECT_EQ(index.find("a"), &a);
    EXPECT_EQ(index.find("b"), &b);
    index.erase("a");
    EXPECT_EQ(index.find("a"), nullptr);
    EXPECT_EQ(index.find("b"), &b);
    EXPECT_EQ(index.size(), 1u);
}

} // namespace
} // namespace sextant::ir
