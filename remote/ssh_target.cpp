#include "remote/ssh_target.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include "remote/agent_script.hpp"
#include "remote/capture.hpp"
#include "remote/local_target.hpp"
#include "remote/shell_words.hpp"
#include "remote/ssh_process.hpp"

namespace ncclsweep::remote {

namespace {

/// Frees an sftp_file on scope exit.
struct SftpFileCloser {
    sftp_file file;
    ~SftpFileCloser() {
        if (file != nullptr) sftp_close(file);
    }
};

}  // namespace

Result<std::unique_ptr<SshTarget>> SshTarget::connect(const TargetUrl& url, SshOptions options) {
    auto session = SshSession::open(url, options);
    if (!session) return session.error();
    auto agent = SshAgent::start(*session, options);
    if (!agent) return agent.error();
    return std::unique_ptr<SshTarget>(
        new SshTarget(url, std::move(options), std::move(*session), std::move(*agent)));
}

SshTarget::SshTarget(TargetUrl url, SshOptions options, std::shared_ptr<SshSession> session,
                     std::shared_ptr<SshAgent> agent)
    : m_url(std::move(url)),
      m_options(std::move(options)),
      m_session(std::move(session)),
      m_agent(std::move(agent)) {}

std::string SshTarget::describe() const {
    return m_url.to_string();
}

Result<void> SshTarget::reconnect() {
    m_known_dirs.clear();
    m_agent.reset();  // processes still holding the old ones keep them alive until they go
    m_session.reset();
    auto session = SshSession::open(m_url, m_options);
    if (!session) return session.error();
    auto agent = SshAgent::start(*session, m_options);
    if (!agent) return agent.error();
    m_session = std::move(*session);
    m_agent = std::move(*agent);
    return success();
}

Result<void> SshTarget::make_dirs(const std::string& path) {
    auto made = make_dirs_once(path);
    if (!made && m_session->drop_dead_sftp()) made = make_dirs_once(path);
    return made;
}

Result<void> SshTarget::make_dirs_once(const std::string& path) {
    auto sftp = m_session->sftp();
    if (!sftp) return sftp.error();
    std::string prefix = path.rfind('/', 0) == 0 ? "/" : "";
    std::size_t begin = 0;
    while (begin <= path.size()) {
        const std::size_t end = std::min(path.find('/', begin), path.size());
        const std::string part = path.substr(begin, end - begin);
        begin = end + 1;
        if (part.empty() || part == ".") continue;
        prefix += part;
        if (m_known_dirs.count(prefix) != 0) {
            prefix += '/';
            continue;
        }
        // Look before creating: SFTP reports an existing directory as a plain failure (4),
        // indistinguishable from a refused mkdir.
        sftp_attributes existing = sftp_stat(*sftp, prefix.c_str());
        if (existing != nullptr) {
            const bool is_dir = existing->type == SSH_FILEXFER_TYPE_DIRECTORY;
            sftp_attributes_free(existing);
            if (!is_dir) {
                return Error::infrastructure(
                    fmt::format("{}: cannot create directory '{}': a file of that name is in the way; "
                                "remove it or set target.workdir",
                                describe(), prefix));
            }
        } else if (sftp_mkdir(*sftp, prefix.c_str(), 0755) != SSH_OK) {
            const int code = sftp_get_error(*sftp);
            sftp_attributes raced = sftp_stat(*sftp, prefix.c_str());  // made meanwhile by another runner
            const bool is_dir = raced != nullptr && raced->type == SSH_FILEXFER_TYPE_DIRECTORY;
            if (raced != nullptr) sftp_attributes_free(raced);
            if (!is_dir) {
                return Error::infrastructure(
                    fmt::format("{}: cannot create directory '{}' (SFTP error {}: {}); check permissions "
                                "or set target.workdir",
                                describe(), prefix, code, m_session->last_error()));
            }
        }
        m_known_dirs.insert(prefix);
        prefix += '/';
    }
    return success();
}

Result<std::string> SshTarget::prepare_workdir(const std::string& sweep_id) {
    if (auto ok = check_sweep_id(sweep_id); !ok) return ok.error();
    const std::string root = m_options.workdir_root.empty() ? ".ncclsweep/work" : m_options.workdir_root;
    const std::string dir = root + "/" + sweep_id;
    m_known_dirs.clear();  // look at each again: a resumed sweep's may have gone
    if (auto ok = make_dirs(dir); !ok) return ok.error();
    auto sftp = m_session->sftp();
    if (!sftp) return sftp.error();
    char* absolute = sftp_canonicalize_path(*sftp, dir.c_str());
    if (absolute == nullptr)
        return Error::infrastructure(
            fmt::format("{}: cannot resolve '{}': {}", describe(), dir, m_session->last_error()));
    m_workdir = absolute;
    ssh_string_free_char(absolute);
    return m_workdir;
}

Result<void> SshTarget::put_file(const std::string& path, const std::string& content) {
    if (path.find('\0') != std::string::npos) return Error::bad_input("ssh: a file path contains a NUL byte");
    auto put = put_file_once(path, content);
    if (!put && put.error().kind == ErrorKind::infrastructure) {
        // Once more, on a fresh SFTP subsystem if the old one died, and looking again at every
        // directory (one known to exist may have been removed behind our back).
        m_session->drop_dead_sftp();
        m_known_dirs.clear();
        put = put_file_once(path, content);
    }
    return put;
}

Result<void> SshTarget::put_file_once(const std::string& path, const std::string& content) {
    if (const auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
        if (auto ok = make_dirs(path.substr(0, slash)); !ok) return ok.error();
    }
    auto sftp = m_session->sftp();
    if (!sftp) return sftp.error();
    const std::string temp = fmt::format("{}.tmp.ncclsweep.{}", path, ++m_temp_counter);
    {
        SftpFileCloser file{sftp_open(*sftp, temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
        if (file.file == nullptr) {
            return Error::infrastructure(fmt::format("{}: cannot create '{}' (SFTP error {}): {}", describe(),
                                                     temp, sftp_get_error(*sftp), m_session->last_error()));
        }
        std::size_t done = 0;
        while (done < content.size()) {
            const std::size_t piece = std::min<std::size_t>(content.size() - done, 32 * 1024);
            const ssize_t n = sftp_write(file.file, content.data() + done, piece);
            if (n <= 0) {
                sftp_unlink(*sftp, temp.c_str());
                return Error::infrastructure(
                    fmt::format("{}: cannot write '{}': {}", describe(), temp, m_session->last_error()));
            }
            done += static_cast<std::size_t>(n);
        }
    }
    // SFTP v3 rename (all libssh 0.10 offers) refuses to replace an existing file (a repeat
    // or a resumed sweep writes the same experiment's files again). Then remove the old file
    // and rename again, all over SFTP: nothing reads these files until the workload starts,
    // so the moment without one does no harm. `mv -f` through the agent (arguments quoted as
    // data) is the last resort, for servers that refuse the unlink.
    if (sftp_rename(*sftp, temp.c_str(), path.c_str()) == SSH_OK) return success();
    if (sftp_unlink(*sftp, path.c_str()) == SSH_OK &&
        sftp_rename(*sftp, temp.c_str(), path.c_str()) == SSH_OK)
        return success();
    const int code = sftp_get_error(*sftp);
    auto moved = capture({"mv", "-f", "--", temp, path}, m_options.connect_timeout);
    if (moved) return success();
    sftp_unlink(*sftp, temp.c_str());
    return Error::infrastructure(fmt::format("{}: cannot rename '{}' to '{}' (SFTP error {}; mv: {})",
                                             describe(), temp, path, code, moved.error().message));
}

Result<std::unique_ptr<Process>> SshTarget::start(const Command& command) {
    if (!m_agent) return Error::infrastructure(fmt::format("{}: not connected; reconnect first", describe()));
    auto script =
        command_script(command, m_workdir, ExecLast::yes, "ssh", script_env_options(m_agent->banner()));
    if (!script) return script.error();
    auto process = SshProcess::start(m_agent, *script, m_options);
    if (!process) return process.error();
    return std::unique_ptr<Process>(std::move(*process));
}

Result<std::string> SshTarget::capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
    return capture_output(*this, argv, timeout);
}

}  // namespace ncclsweep::remote
