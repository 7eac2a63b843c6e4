#pragma once
// Result<T>: an expected-style return type used below cli/. No exceptions cross library
// boundaries; wrap third-party errors (yaml-cpp, SQLite, libssh, filesystem) at the edge.
#include <string>
#include <utility>
#include <variant>

namespace ncclsweep {

/// What kind of failure an Error is; cli/ maps it to an exit status (README.md, core/exit_status.hpp).
enum class ErrorKind {
    bad_input,         ///< the user's spec, flags or files are wrong (exit 2)
    infrastructure,    ///< ssh, database, host busy, I/O: the sweep can be resumed (exit 3)
    negative_verdict,  ///< the command worked and its answer is "no" (exit 1)
    internal,          ///< a bug or an unexpected system failure (exit 3)
};

/// A failure: what was wrong, where, and what to do. `message` is complete on its own
/// (e.g. "spec.yaml:12:5: NCCL_NTHREADS=100 is not a multiple of 32; use 64..512 in steps of 32").
struct Error {
    ErrorKind kind = ErrorKind::internal;
    std::string message;

    static Error bad_input(std::string m) { return {ErrorKind::bad_input, std::move(m)}; }
    static Error infrastructure(std::string m) { return {ErrorKind::infrastructure, std::move(m)}; }
    static Error internal(std::string m) { return {ErrorKind::internal, std::move(m)}; }
};

/// Either a value or an Error (like std::expected<T, Error>).
template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : m_data(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : m_data(std::in_place_index<1>, std::move(error)) {}

    [[nodiscard]] bool ok() const { return m_data.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & { return std::get<0>(m_data); }
    const T& value() const& { return std::get<0>(m_data); }
    T&& value() && { return std::get<0>(std::move(m_data)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    [[nodiscard]] const Error& error() const { return std::get<1>(m_data); }

private:
    std::variant<T, Error> m_data;
};

/// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : m_error(std::move(error)), m_ok(false) {}
    [[nodiscard]] bool ok() const { return m_ok; }
    explicit operator bool() const { return m_ok; }
    [[nodiscard]] const Error& error() const { return m_error; }

private:
    Error m_error;
    bool m_ok = true;
};

/// Shorthand for a successful Result<void>.
inline Result<void> success() {
    return {};
}

}  // namespace ncclsweep
