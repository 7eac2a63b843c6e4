#include "remote/sftp_files.hpp"

#include <fcntl.h>

#include <fmt/format.h>

#include <sstream>

namespace ncclsweep::remote {

namespace {

Result<void> write_once(SshSession& session, const std::string& path, const std::string& content, int mode) {
    auto sftp = session.sftp();
    if (!sftp) return sftp.error();
    sftp_file file = sftp_open(*sftp, path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, static_cast<mode_t>(mode));
    if (file == nullptr)
        return Error::infrastructure(fmt::format("{}: cannot create '{}' (SFTP error {}): {}", session.name(),
                                                 path, sftp_get_error(*sftp), session.last_error()));
    std::size_t done = 0;
    while (done < content.size()) {
        const std::size_t piece = std::min<std::size_t>(content.size() - done, 32 * 1024);
        const ssize_t n = sftp_write(file, content.data() + done, piece);
        if (n <= 0) {
            sftp_close(file);
            return Error::infrastructure(
                fmt::format("{}: cannot write '{}': {}", session.name(), path, session.last_error()));
        }
        done += static_cast<std::size_t>(n);
    }
    if (sftp_close(file) != SSH_OK)
        return Error::infrastructure(
            fmt::format("{}: cannot close '{}': {}", session.name(), path, session.last_error()));
    return success();
}

}  // namespace

Result<void> sftp_write_file(SshSession& session, const std::string& path, const std::string& content,
                             int mode) {
    auto written = write_once(session, path, content, mode);
    if (!written && session.drop_dead_sftp()) written = write_once(session, path, content, mode);
    return written;
}

std::string login_shell_of(SshSession& session, const std::string& user) {
    auto sftp = session.sftp();
    if (!sftp) return {};
    sftp_file file = sftp_open(*sftp, "/etc/passwd", O_RDONLY, 0);
    if (file == nullptr) return {};
    std::string text;
    char buffer[16 * 1024];
    for (ssize_t n; text.size() < 4 * 1024 * 1024 && (n = sftp_read(file, buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    sftp_close(file);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(user + ":", 0) != 0) continue;
        const auto last = line.rfind(':');
        return line.substr(last + 1);
    }
    return {};
}

SftpTail::SftpTail(std::shared_ptr<SshSession> session, std::string path)
    : m_session(std::move(session)), m_path(std::move(path)) {}

SftpTail::~SftpTail() {
    close();
}

void SftpTail::close() {
    // A file of a dropped subsystem is still safe to close: the session frees those last.
    if (m_file != nullptr) sftp_close(m_file);
    m_file = nullptr;
}

int SftpTail::open() {
    if (m_file != nullptr && m_generation == m_session->sftp_generation()) return 1;
    close();
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto sftp = m_session->sftp();
        if (!sftp) return -1;
        m_generation = m_session->sftp_generation();
        m_file = sftp_open(*sftp, m_path.c_str(), O_RDONLY, 0);
        if (m_file != nullptr) return 1;
        if (sftp_get_error(*sftp) == SSH_FX_NO_SUCH_FILE) return 0;
        if (!m_session->drop_dead_sftp()) return -1;
    }
    return -1;
}

long SftpTail::read(char* buffer, std::size_t size) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int opened = open();
        if (opened <= 0) return opened;
        // Where the last read stopped; this also clears libssh's remembered end of file, so a
        // file that grew since is read on.
        sftp_seek64(m_file, m_offset);
        const ssize_t n = sftp_read(m_file, buffer, size);
        if (n >= 0) {
            m_offset += static_cast<std::uint64_t>(n);
            return static_cast<long>(n);
        }
        if (!m_session->drop_dead_sftp()) return -1;
    }
    return -1;
}

}  // namespace ncclsweep::remote
