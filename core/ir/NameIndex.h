#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace sextant::ir {

/// Finds a graph's nodes or values by name: an open-addressing hash table of (hash, pointer)
/// pairs in one array, probed linearly, keyed by the objects' own names (T::name()), so no name
/// is copied into the index.
///
/// A lookup reads one or two neighbouring slots and then the one object whose hash matches;
/// std::unordered_map<std::string, T*> read a bucket, a list node and the key's heap block,
/// each somewhere else in memory. On a 20,000-node graph the rewrite passes' lookups, inserts
/// and erases were about a tenth of the pipeline's time that way (BENCHMARKS.md, "Tenth round").
///
/// An object's name must not change while it is in the index: erase it, rename, insert it again.
/// The index is never iterated, so its order cannot leak into any output.
template <typename T> class NameIndex {
public:
    T* find(std::string_view name) const {
        if (m_slots.empty())
            return nullptr;
        const uint64_t h = hashOf(name);
        for (size_t i = h & mask();; i = (i + 1) & mask()) {
            const Slot& s = m_slots[i];
            if (!s.object)
                return nullptr;
            if (s.hash == h && s.object->name() == name)
                return s.object;
        }
    }
    bool contains(std::string_view name) const { return find(name) != nullptr; }

    /// Adds `object` under its name, replacing the object that had the name, if any.
    void insert(T* object) {
        if ((m_size + 1) * 4 > m_slots.size() * 3)
            rehash(m_slots.empty() ? 16 : m_slots.size() * 2);
        const uint64_t h = hashOf(object->name());
        for (size_t i = h & mask();; i = (i + 1) & mask()) {
            Slot& s = m_slots[i];
            if (!s.object) {
                s = {h, object};
                ++m_size;
                return;
            }
            if (s.hash == h && s.object->name() == object->name()) {
                s.object = object;
                return;
            }
        }
    }

    /// Removes the object named `name`, if there is one.
    void erase(std::string_view name) {
        if (m_slots.empty())
            return;
        const uint64_t h = hashOf(name);
        size_t i = h & mask();
        for (;; i = (i + 1) & mask()) {
            const Slot& s = m_slots[i];
            if (!s.object)
                return;
            if (s.hash == h && s.object->name() == name)
                break;
        }
        // Backward-shift deletion: move later members of the probe run into the hole wherever
        // their home slot allows it, so lookups never need tombstones.
        for (size_t hole = i, j = (i + 1) & mask();; j = (j + 1) & mask()) {
            Slot& s = m_slots[j];
            if (!s.object) {
                m_slots[hole] = {};
                break;
            }
            const size_t home = s.hash & mask();
            // s may fill the hole if the hole lies on its probe path from home to j.
            if (((j - home) & mask()) >= ((j - hole) & mask())) {
                m_slots[hole] = s;
                hole = j;
            }
        }
        --m_size;
    }

    /// Makes room for `n` objects without growing.
    void reserve(size_t n) {
        size_t want = 16;
        while (want * 3 < n * 4)
            want *= 2;
        if (want > m_slots.size())
            rehash(want);
    }

    size_t size() const { return m_size; }

private:
    struct Slot {
        uint64_t hash = 0;
        T* object = nullptr; ///< null: empty
    };

    static uint64_t hashOf(std::string_view name) { return std::hash<std::string_view>{}(name); }
    size_t mask() const { return m_slots.size() - 1; }

    void rehash(size_t capacity) {
        std::vector<Slot> old(capacity);
        old.swap(m_slots);
        for (const Slot& s : old) {
            if (!s.object)
                continue;
            size_t i = s.hash & mask();
            while (m_slots[i].object)
                i = (i + 1) & mask();
            m_slots[i] = s;
        }
    }

    std::vector<Slot> m_slots; ///< a power of two long, at most three quarters full
    size_t m_size = 0;
};

} // namespace sextant::ir
