#pragma once
// Splits a byte stream into lines with a hard cap on the memory one line may take. Shared by
// LocalTarget and SshTarget so both treat floods, huge lines and binary bytes the same way.
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/target.hpp"

namespace ncclsweep::remote {

/// Default longest line kept (longer lines are cut and flagged `truncated`).
inline constexpr std::size_t k_default_line_limit = 64 * 1024;

/// The lines read and not handed out yet, oldest first. A ring of OutputLines that keeps their
/// text buffers: lines pass through it by swapping buffers, so a steady stream of lines
/// allocates nothing per line (a std::deque frees and allocates a node every few lines). What
/// it keeps is bounded: buffers up to 4 KiB, and 1024 lines' worth once it is empty again.
class LineQueue {
public:
    [[nodiscard]] bool empty() const { return m_size == 0; }
    [[nodiscard]] std::size_t size() const { return m_size; }
    /// The i-th oldest line.
    [[nodiscard]] OutputLine& operator[](std::size_t i) { return m_ring[(m_head + i) & (m_ring.size() - 1)]; }
    [[nodiscard]] const OutputLine& operator[](std::size_t i) const {
        return m_ring[(m_head + i) & (m_ring.size() - 1)];
    }
    [[nodiscard]] OutputLine& front() { return (*this)[0]; }
    [[nodiscard]] OutputLine& back() { return (*this)[m_size - 1]; }
    /// Appends a line and returns it: empty text (with a buffer an earlier line left), not
    /// truncated.
    OutputLine& push_back() {
        if (m_size == m_ring.size()) grow();
        OutputLine& line = (*this)[m_size++];
        line.text.clear();
        line.truncated = false;
        return line;
    }
    /// Hands the oldest line to `line`: they swap text buffers, so `line`'s old buffer holds a
    /// later line. Must not be empty.
    void pop_front_into(OutputLine& line) {
        OutputLine& oldest = front();
        line.stream = oldest.stream;
        line.when = oldest.when;
        line.truncated = oldest.truncated;
        line.text.swap(oldest.text);
        if (oldest.text.capacity() > k_keep_capacity) std::string().swap(oldest.text);
        m_head = (m_head + 1) & (m_ring.size() - 1);
        if (--m_size == 0) release_when_empty();
    }
    /// Removes the i-th oldest line; the others keep their order.
    void erase(std::size_t i);
    /// Removes every line.
    void clear();
    /// Lines it has room for without growing, and the bytes of text buffers it holds: what it
    /// keeps between lines (bounded, see above).
    [[nodiscard]] std::size_t slots() const { return m_ring.size(); }
    [[nodiscard]] std::size_t held_bytes() const;

    /// Text buffers kept for reuse are at most this large; a queue that empties keeps at most
    /// this many lines: what a queue holds on to stays under 4 MiB whatever came through it.
    static constexpr std::size_t k_keep_capacity = 4096;
    static constexpr std::size_t k_keep_lines = 1024;  // a power of two, as the ring's sizes

private:
    void grow();
    void release_when_empty();

    std::vector<OutputLine> m_ring;  ///< its size is 0 or a power of two
    std::size_t m_head = 0;
    std::size_t m_size = 0;
};

/// Turns chunks of one stream into OutputLines. A line longer than `limit` bytes is emitted as
/// soon as the limit is passed (first `limit` bytes, truncated=true) and the rest of it, up to
/// the next '\n', is dropped without being stored. Bytes are passed through unchanged. The lines
/// of one feed() share one time stamp: when that chunk was read.
class LineSplitter {
public:
    /// `stream` tags every line; `limit` is the longest line kept (at least 1).
    LineSplitter(Stream stream, std::size_t limit);
    /// Consumes `size` bytes and appends every completed line to `out`.
    void feed(const char* data, std::size_t size, LineQueue& out);
    /// At end of stream: emits the unterminated last line, if any.
    void finish(LineQueue& out);
    /// Bytes currently held for an unterminated line (never more than the limit).
    [[nodiscard]] std::size_t pending() const { return m_buffer.size(); }

private:
    void emit(LineQueue& out, bool truncated, std::chrono::steady_clock::time_point when);

    Stream m_stream;
    std::size_t m_limit;
    std::string m_buffer;
    bool m_discarding = false;  ///< inside the dropped tail of a truncated line
};

/// Moves the oldest of `lines` into `line`; false when there is none. How a process's poll hands
/// over what its splitters queued (LocalProcess, SshProcess, LogFollower).
[[nodiscard]] inline bool take_line(LineQueue& lines, OutputLine& line) {
    if (lines.empty()) return false;
    lines.pop_front_into(line);
    return true;
}

}  // namespace ncclsweep::remote
