#pragma once
// Files on an ssh host through the connection's SFTP subsystem: writing a small file whole, and
// following a file as it grows (a command's output in the agent's spool directory).
#include <libssh/sftp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.hpp"
#include "remote/ssh_session.hpp"

namespace ncclsweep::remote {

/// Creates (or truncates) `path` with `mode` and writes `content` to it, retried once on a
/// fresh SFTP subsystem when the old one died. infrastructure error naming the host and path.
Result<void> sftp_write_file(SshSession& session, const std::string& path, const std::string& content,
                             int mode);

/// The login shell /etc/passwd lists for `user` on the host, read over SFTP (no shell runs);
/// "" when it cannot be read or the user is not there (a directory service).
[[nodiscard]] std::string login_shell_of(SshSession& session, const std::string& user);

/// Reads a file from where the last read stopped, as it grows. The file is opened on first
/// use (one that does not exist yet reads as empty) and opened again, at the same offset, when
/// the SFTP subsystem was replaced.
class SftpTail {
public:
    SftpTail(std::shared_ptr<SshSession> session, std::string path);
    ~SftpTail();
    SftpTail(const SftpTail&) = delete;
    SftpTail& operator=(const SftpTail&) = delete;

    /// Up to `size` new bytes into `buffer`: their count, 0 when nothing new has been written,
    /// -1 when the file cannot be read (the connection failed).
    long read(char* buffer, std::size_t size);
    /// Closes the file (reads after this open it again).
    void close();
    /// Bytes read so far.
    [[nodiscard]] std::uint64_t offset() const { return m_offset; }

private:
    /// 1 opened, 0 not there yet, -1 failed.
    int open();

    std::shared_ptr<SshSession> m_session;
    std::string m_path;
    sftp_file m_file = nullptr;
    unsigned m_generation = 0;
    std::uint64_t m_offset = 0;
};

}  // namespace ncclsweep::remote
