#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace sextant {

/// What kind of failure an Error reports; lets callers (CLI exit codes, GUI jump-to-cause) react.
enum class ErrorKind {
    Io,          ///< a file could not be read or written
    Parse,       ///< malformed input: protobuf, JSON, textual IR, artifact
    Unsupported, ///< valid input the project does not handle (op, attribute, dtype)
    Invalid,     ///< input that contradicts itself (shapes, cycles, dangling names)
    Verify,      ///< an internal invariant a pass or phase broke
    Runtime,     ///< execution failed (simulator watchdog, bad address)
    Cancelled,   ///< the user cancelled long work
};

/// A recoverable error: a message (lower-case, no trailing period) and, where known, the id of the
/// node, pass, rule or Task it concerns so a GUI can jump to it.
struct Error {
    ErrorKind kind = ErrorKind::Invalid;
    std::string message;
    std::string subject; ///< node / pass / rule / Task id, or empty

    /// The one-line form the CLI prints after "error: ".
    std::string str() const { return message; }
};

inline Error makeError(ErrorKind kind, std::string message, std::string subject = {}) {
    return Error{kind, std::move(message), std::move(subject)};
}

/// Either a value or an Error. No exceptions cross library boundaries; this is what they return.
template <typename T> class [[nodiscard]] Expected {
public:
    Expected(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
    Expected(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}

    bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { assert(ok() && "value() on an error"); return std::get<0>(m_v); }
    const T& value() const& { assert(ok() && "value() on an error"); return std::get<0>(m_v); }
    T&& value() && { assert(ok() && "value() on an error"); return std::get<0>(std::move(m_v)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const { assert(!ok() && "error() on a value"); return std::get<1>(m_v); }
    Error takeError() { assert(!ok()); return std::get<1>(std::move(m_v)); }

private:
    std::variant<T, Error> m_v;
};

/// Expected<void>: success or an Error.
template <> class [[nodiscard]] Expected<void> {
public:
    Expected() = default;
    Expected(Error error) : m_error(std::move(error)), m_failed(true) {}

    bool ok() const { return !m_failed; }
    explicit operator bool() const { return ok(); }
    const Error& error() const { assert(m_failed); return m_error; }
    Error takeError() { assert(m_failed); return std::move(m_error); }

private:
    Error m_error;
    bool m_failed = false;
};

using Status = Expected<void>;

} // namespace sextant

/// Propagate an error from an Expected<...> expression out of a function returning Expected<...>.
#define SX_TRY(expr)                                                                               \
    do {                                                                                           \
        auto sxTryResult_ = (expr);                                                                \
        if (!sxTryResult_.ok())                                                                    \
            return sxTryResult_.takeError();                                                       \
    } while (0)

/// Bind the value of an Expected<T> expression to `var`, or return its error.
#define SX_ASSIGN(var, expr)                                                                       \
    auto SX_CONCAT_(sxAssign_, __LINE__) = (expr);                                                 \
    if (!SX_CONCAT_(sxAssign_, __LINE__).ok())                                                     \
        return SX_CONCAT_(sxAssign_, __LINE__).takeError();                                        \
    var = std::move(SX_CONCAT_(sxAssign_, __LINE__)).value()
#define SX_CONCAT_INNER_(a, b) a##b
#define SX_CONCAT_(a, b) SX_CONCAT_INNER_(a, b)
