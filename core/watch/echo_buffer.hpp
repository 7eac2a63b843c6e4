#pragma once
// The echo of a watched program's output (`ncclsweep watch` copies it to its stderr): lines are
// gathered and handed to the writer in large pieces — one per chunk the program's output was
// read in — instead of one system call per line, and no line waits longer than a short delay.
// It reads no clock: lines carry their read time and tick() carries "now", so tests drive it
// with a fake clock.
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/target.hpp"

namespace ncclsweep::inline watch {

/// When the echo writes.
struct EchoOptions {
    /// Written as soon as this many bytes are gathered (bounds the memory it holds).
    std::size_t max_bytes = 64 * 1024;
    /// No line waits longer than this once tick() is called: supervise() ticks whenever a
    /// poll of the program's output returned nothing.
    std::chrono::milliseconds max_delay{100};
};

/// Gathers output lines and writes them in large pieces. Lines read together (the same
/// OutputLine::when: one read of the pipe or file) are written together; a line read later
/// first writes what was gathered before it. Everything gathered is written at max_bytes, at a
/// tick() once its oldest line has waited max_delay, at flush() and at destruction.
class EchoBuffer {
public:
    using TimePoint = std::chrono::steady_clock::time_point;
    /// Receives each piece: whole lines, each ending in '\n'. It should write all of it.
    using Writer = std::function<void(std::string_view)>;

    explicit EchoBuffer(Writer writer, EchoOptions options = {});
    ~EchoBuffer();
    EchoBuffer(const EchoBuffer&) = delete;
    EchoBuffer& operator=(const EchoBuffer&) = delete;

    /// Adds `line` and its newline; writes first when it starts a new read (its `when` differs
    /// from the last line's), and after when the buffer reached max_bytes.
    void add(const OutputLine& line);
    /// Time passed without a line: writes what is gathered once its oldest line waited
    /// max_delay by `now`.
    void tick(TimePoint now);
    /// Writes everything gathered now.
    void flush();

    /// Bytes gathered and not yet written.
    [[nodiscard]] std::size_t buffered() const { return m_buffer.size(); }
    /// Pieces handed to the writer so far.
    [[nodiscard]] std::size_t writes() const { return m_writes; }

private:
    Writer m_writer;
    EchoOptions m_options;
    std::string m_buffer;
    TimePoint m_oldest{};     ///< when the oldest gathered line was read
    TimePoint m_last_read{};  ///< when the newest gathered line was read
    std::size_t m_writes = 0;
};

}  // namespace ncclsweep::inline watch
