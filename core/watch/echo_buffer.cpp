// The echo of a watched program's output, in large writes (see echo_buffer.hpp).
#include "core/watch/echo_buffer.hpp"

#include <utility>

namespace ncclsweep::inline watch {

EchoBuffer::EchoBuffer(Writer writer, EchoOptions options) : m_writer(std::move(writer)), m_options(options) {
    m_buffer.reserve(m_options.max_bytes);
}

EchoBuffer::~EchoBuffer() {
    flush();
}

void EchoBuffer::add(const OutputLine& line) {
    if (!m_buffer.empty() && line.when != m_last_read) flush();  // a new read: the last one is whole
    if (m_buffer.empty()) m_oldest = line.when;
    m_last_read = line.when;
    m_buffer.append(line.text);
    m_buffer.push_back('\n');
    if (m_buffer.size() >= m_options.max_bytes) flush();
}

void EchoBuffer::tick(TimePoint now) {
    if (!m_buffer.empty() && now - m_oldest >= m_options.max_delay) flush();
}

void EchoBuffer::flush() {
    if (m_buffer.empty()) return;
    ++m_writes;
    if (m_writer) m_writer(m_buffer);
    m_buffer.clear();
}

}  // namespace ncclsweep::inline watch
