#include "remote/line_splitter.hpp"

#include <algorithm>
#include <cstring>

namespace ncclsweep::remote {

LineSplitter::LineSplitter(Stream stream, std::size_t limit)
    : m_stream(stream), m_limit(std::max<std::size_t>(limit, 1)) {}

void LineSplitter::emit(std::deque<OutputLine>& out, bool truncated) {
    OutputLine line;
    line.stream = m_stream;
    line.text = std::move(m_buffer);
    line.when = std::chrono::steady_clock::now();
    line.truncated = truncated;
    out.push_back(std::move(line));
    m_buffer.clear();
}

void LineSplitter::feed(const char* data, std::size_t size, std::deque<OutputLine>& out) {
    const char* end = data + size;
    while (data < end) {
        const auto* newline =
            static_cast<const char*>(std::memchr(data, '\n', static_cast<std::size_t>(end - data)));
        const char* stop = newline != nullptr ? newline : end;
        if (m_discarding) {
            if (newline == nullptr) return;  // still inside the dropped tail
            m_discarding = false;
            data = newline + 1;
            continue;
        }
        const auto piece = static_cast<std::size_t>(stop - data);
        const std::size_t room = m_limit - m_buffer.size();
        if (piece > room) {
            // The line passes the limit: keep what fits, emit it now, drop the rest.
            m_buffer.append(data, room);
            emit(out, true);
            if (newline == nullptr) {
                m_discarding = true;
                return;
            }
            data = newline + 1;
            continue;
        }
        m_buffer.append(data, piece);
        if (newline == nullptr) return;
        emit(out, false);
        data = newline + 1;
    }
}

void LineSplitter::finish(std::deque<OutputLine>& out) {
    if (!m_buffer.empty()) emit(out, false);
    m_discarding = false;
}

}  // namespace ncclsweep::remote
