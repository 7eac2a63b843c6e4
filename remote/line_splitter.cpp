#include "remote/line_splitter.hpp"

#include <algorithm>
#include <cstring>

namespace ncclsweep::remote {

void LineQueue::grow() {
    // Full: unroll into a ring twice the size, oldest first.
    const std::size_t size = std::max<std::size_t>(16, 2 * m_ring.size());
    std::vector<OutputLine> larger;
    larger.reserve(size);
    for (std::size_t i = 0; i < m_size; ++i) larger.push_back(std::move((*this)[i]));
    larger.resize(size);
    m_ring = std::move(larger);
    m_head = 0;
}

void LineQueue::erase(std::size_t i) {
    for (; i + 1 < m_size; ++i) std::swap((*this)[i], (*this)[i + 1]);
    --m_size;
    release_when_empty();
}

void LineQueue::clear() {
    m_size = 0;
    release_when_empty();
}

std::size_t LineQueue::held_bytes() const {
    std::size_t bytes = 0;
    for (const auto& line : m_ring) bytes += line.text.capacity();
    return bytes;
}

void LineQueue::release_when_empty() {
    if (m_size != 0) return;
    m_head = 0;  // the next lines reuse the first slots (and their buffers)
    if (m_ring.size() > k_keep_lines) {
        m_ring.resize(k_keep_lines);
        m_ring.shrink_to_fit();
    }
}

LineSplitter::LineSplitter(Stream stream, std::size_t limit)
    : m_stream(stream), m_limit(std::max<std::size_t>(limit, 1)) {}

void LineSplitter::emit(LineQueue& out, bool truncated, std::chrono::steady_clock::time_point when) {
    OutputLine& line = out.push_back();
    line.stream = m_stream;
    line.text.swap(m_buffer);  // m_buffer takes the slot's old buffer for the next line
    line.when = when;
    line.truncated = truncated;
    if (m_buffer.capacity() > LineQueue::k_keep_capacity) std::string().swap(m_buffer);
}

void LineSplitter::feed(const char* data, std::size_t size, LineQueue& out) {
    const char* end = data + size;
    const auto when = std::chrono::steady_clock::now();
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
            emit(out, true, when);
            if (newline == nullptr) {
                m_discarding = true;
                return;
            }
            data = newline + 1;
            continue;
        }
        m_buffer.append(data, piece);
        if (newline == nullptr) return;
        emit(out, false, when);
        data = newline + 1;
    }
}

void LineSplitter::finish(LineQueue& out) {
    if (!m_buffer.empty()) emit(out, false, std::chrono::steady_clock::now());
    m_discarding = false;
}

}  // namespace ncclsweep::remote
