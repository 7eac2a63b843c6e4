#pragma once
// Splits a byte stream into lines with a hard cap on the memory one line may take. Shared by
// LocalTarget and SshTarget so both treat floods, huge lines and binary bytes the same way.
#include <cstddef>
#include <deque>
#include <string>
#include <utility>

#include "core/target.hpp"

namespace ncclsweep::remote {

/// Default longest line kept (longer lines are cut and flagged `truncated`).
inline constexpr std::size_t k_default_line_limit = 64 * 1024;

/// Turns chunks of one stream into OutputLines. A line longer than `limit` bytes is emitted as
/// soon as the limit is passed (first `limit` bytes, truncated=true) and the rest of it, up to
/// the next '\n', is dropped without being stored. Bytes are passed through unchanged.
class LineSplitter {
public:
    /// `stream` tags every line; `limit` is the longest line kept (at least 1).
    LineSplitter(Stream stream, std::size_t limit);
    /// Consumes `size` bytes and appends every completed line to `out`.
    void feed(const char* data, std::size_t size, std::deque<OutputLine>& out);
    /// At end of stream: emits the unterminated last line, if any.
    void finish(std::deque<OutputLine>& out);
    /// Bytes currently held for an unterminated line (never more than the limit).
    [[nodiscard]] std::size_t pending() const { return m_buffer.size(); }

private:
    void emit(std::deque<OutputLine>& out, bool truncated);

    Stream m_stream;
    std::size_t m_limit;
    std::string m_buffer;
    bool m_discarding = false;  ///< inside the dropped tail of a truncated line
};

/// Moves the oldest of `lines` into `line`; false when there is none. How a process's poll hands
/// over what its splitters queued (LocalProcess, SshProcess, LogFollower).
[[nodiscard]] inline bool take_line(std::deque<OutputLine>& lines, OutputLine& line) {
    if (lines.empty()) return false;
    line = std::move(lines.front());
    lines.pop_front();
    return true;
}

}  // namespace ncclsweep::remote
