// SshTarget's reads and the work directory's lock, over SFTP (no remote shell is started: each
// exec channel costs a login-shell start on the host).
#include <fcntl.h>

#include <fmt/format.h>

#include "remote/ssh_target.hpp"
#include "remote/workdir_lock.hpp"

namespace ncclsweep::remote {
namespace {

/// Closes an sftp_file on scope exit.
struct OpenSftpFile {
    sftp_file file = nullptr;
    ~OpenSftpFile() {
        if (file != nullptr) sftp_close(file);
    }
};

}  // namespace

SshTarget::~SshTarget() {
    if (m_lock_path.empty() || !m_session) return;
    auto sftp = m_session->sftp();
    if (sftp) sftp_unlink(*sftp, m_lock_path.c_str());
}

Result<std::optional<std::string>> SshTarget::get_file(const std::string& path, std::size_t limit) {
    if (path.find('\0') != std::string::npos) return Error::bad_input("ssh: a file path contains a NUL byte");
    auto sftp = m_session->sftp();
    if (!sftp && m_session->drop_dead_sftp()) sftp = m_session->sftp();
    if (!sftp) return sftp.error();
    // Look before opening: the SFTP server's open of a FIFO blocks until a writer comes, and
    // the runner with it. Only a regular file is read (a link is not followed).
    sftp_attributes before = sftp_lstat(*sftp, path.c_str());
    if (before == nullptr) {
        if (sftp_get_error(*sftp) == SSH_FX_NO_SUCH_FILE) return std::optional<std::string>();
        return Error::infrastructure(fmt::format("{}: cannot look at '{}' (SFTP error {}): {}", describe(),
                                                 path, sftp_get_error(*sftp), m_session->last_error()));
    }
    const bool regular_before = before->type == SSH_FILEXFER_TYPE_REGULAR;
    sftp_attributes_free(before);
    if (!regular_before)
        return Error::infrastructure(fmt::format("{}: '{}' is not a regular file", describe(), path));
    OpenSftpFile file{sftp_open(*sftp, path.c_str(), O_RDONLY, 0)};
    if (file.file == nullptr) {
        if (sftp_get_error(*sftp) == SSH_FX_NO_SUCH_FILE) return std::optional<std::string>();
        return Error::infrastructure(fmt::format("{}: cannot open '{}' (SFTP error {}): {}", describe(), path,
                                                 sftp_get_error(*sftp), m_session->last_error()));
    }
    sftp_attributes attributes = sftp_fstat(file.file);
    const bool regular = attributes != nullptr && attributes->type == SSH_FILEXFER_TYPE_REGULAR;
    if (attributes != nullptr) sftp_attributes_free(attributes);
    if (!regular)
        return Error::infrastructure(fmt::format("{}: '{}' is not a regular file", describe(), path));
    std::string content;
    char buffer[16384];
    while (content.size() < limit) {
        const ssize_t n = sftp_read(file.file, buffer, std::min(sizeof buffer, limit - content.size()));
        if (n < 0)
            return Error::infrastructure(
                fmt::format("{}: cannot read '{}': {}", describe(), path, m_session->last_error()));
        if (n == 0) break;
        content.append(buffer, static_cast<std::size_t>(n));
    }
    return std::optional<std::string>(std::move(content));
}

Result<void> SshTarget::lock_workdir(const std::string& holder) {
    if (m_workdir.empty()) return Error::internal("ssh: lock_workdir before prepare_workdir");
    const std::string path = m_workdir + "/" + k_workdir_lock_file;
    const std::string text = lock_holder_text(holder);
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto sftp = m_session->sftp();
        if (!sftp) return sftp.error();
        {
            OpenSftpFile file{sftp_open(*sftp, path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644)};
            if (file.file != nullptr) {
                if (sftp_write(file.file, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
                    sftp_unlink(*sftp, path.c_str());
                    return Error::infrastructure(
                        fmt::format("{}: cannot write the work directory's lock '{}': {}", describe(), path,
                                    m_session->last_error()));
                }
                m_lock_path = path;
                return success();
            }
        }
        auto existing = get_file(path, 4096);
        if (!existing) return existing.error();
        if (!*existing) continue;  // removed meanwhile: try again
        // Another host of this runner's pool on the same shared filesystem took it: it is ours
        // (that host's target removes it at the end).
        if (lock_holder_is_this_process(**existing)) return success();
        // A runner of this host that is gone (a kill -9, a zombie): its lock is stale.
        if (attempt == 0 && lock_holder_gone(**existing)) {
            sftp_unlink(*sftp, path.c_str());
            continue;
        }
        return Error::infrastructure(fmt::format(
            "{}: the work directory {} is in use by {}; two runners of one sweep would overwrite each "
            "other's files: wait for that one to end or stop it; if it is gone (its host restarted), "
            "remove {} on the host and run again",
            describe(), m_workdir, describe_lock_holder(**existing), path));
    }
    return Error::infrastructure(
        fmt::format("{}: could not take the work directory's lock {}; run again", describe(), path));
}

}  // namespace ncclsweep::remote
