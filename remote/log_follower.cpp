#include "remote/log_follower.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include <fmt/format.h>

namespace ncclsweep::remote {

Result<std::unique_ptr<LogFollower>> LogFollower::open(const std::string& path, Follow follow,
                                                       std::size_t line_limit) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Error::bad_input(
            fmt::format("cannot read log file {}: {}; check the path", path, std::strerror(errno)));
    return std::unique_ptr<LogFollower>(new LogFollower(fd, path, follow, line_limit));
}

LogFollower::LogFollower(int fd, std::string path, Follow follow, std::size_t line_limit)
    : m_fd(fd), m_path(std::move(path)), m_follow(follow), m_splitter(Stream::out, line_limit) {}

LogFollower::~LogFollower() {
    if (m_fd >= 0) ::close(m_fd);
}

bool LogFollower::read_some() {
    char buffer[65536];
    ssize_t n = ::read(m_fd, buffer, sizeof buffer);
    if (n > 0) {
        m_offset += n;
        m_splitter.feed(buffer, static_cast<std::size_t>(n), m_lines);
        return true;
    }
    if (n == 0 && m_follow == Follow::yes) {
        // Truncated or rotated in place (copytruncate): start again from the beginning.
        struct stat st {};
        if (::fstat(m_fd, &st) == 0 && st.st_size < m_offset) {
            ::lseek(m_fd, 0, SEEK_SET);
            m_offset = 0;
        }
    }
    return false;
}

PollState LogFollower::poll(std::chrono::milliseconds wait, OutputLine& line) {
    std::optional<std::chrono::steady_clock::time_point> deadline;  // only once a wait is needed
    for (;;) {
        if (take_line(m_lines, line)) {  // its time stamp is when its chunk of the file was read
            return PollState::line;
        }
        if (m_exit) return PollState::exited;
        if (m_stopped) {
            m_splitter.finish(m_lines);
            if (m_lines.empty()) m_exit = ExitInfo{0, 0};
            continue;
        }
        if (read_some()) continue;
        if (m_follow == Follow::no) {
            m_splitter.finish(m_lines);
            if (m_lines.empty()) m_exit = ExitInfo{0, 0};
            continue;
        }
        const auto now = std::chrono::steady_clock::now();
        if (!deadline) deadline = now + wait;
        if (now >= *deadline) return PollState::timeout;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

void LogFollower::kill(std::chrono::milliseconds) {
    m_stopped = true;
}

}  // namespace ncclsweep::remote
