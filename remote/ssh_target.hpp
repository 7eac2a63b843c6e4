#pragma once
// SshTarget: runs experiments on a host reached through one libssh connection per sweep, every
// command through that connection's agent (remote/ssh_agent): the login shell runs once.
#include <memory>
#include <set>
#include <string>

#include "core/target.hpp"
#include "remote/ssh_agent.hpp"
#include "remote/ssh_session.hpp"
#include "remote/target_url.hpp"

namespace ncclsweep::remote {

/// A host reached over ssh (host key verified, key-based auth, SFTP for files).
class SshTarget final : public Target {
public:
    /// Connects to `url` and starts its agent (see SshSession::open and SshAgent::start for
    /// the errors: a login shell that cannot start the agent is refused here, before anything
    /// runs).
    static Result<std::unique_ptr<SshTarget>> connect(const TargetUrl& url, SshOptions options);
    /// "ssh://user@host:port".
    [[nodiscard]] std::string describe() const override;
    /// Creates <root>/<sweep_id> through SFTP (root relative to the remote home) and returns
    /// its absolute path.
    Result<std::string> prepare_workdir(const std::string& sweep_id) override;
    /// SFTP write to a temporary name, then rename over `path`; parents created; mode 0644.
    Result<void> put_file(const std::string& path, const std::string& content) override;
    /// Has the agent start the command (command_script) in its own session on the host.
    Result<std::unique_ptr<Process>> start(const Command& command) override;
    /// Runs argv remotely to completion and returns its stdout.
    Result<std::string> capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) override;
    /// Drops the connection and opens a new one with a new agent (processes of the old one
    /// stay `lost`).
    Result<void> reconnect() override;

private:
    SshTarget(TargetUrl url, SshOptions options, std::shared_ptr<SshSession> session,
              std::shared_ptr<SshAgent> agent);
    /// mkdir -p over SFTP; retried once on a fresh SFTP subsystem when the old one died.
    Result<void> make_dirs(const std::string& path);
    Result<void> make_dirs_once(const std::string& path);
    Result<void> put_file_once(const std::string& path, const std::string& content);

    TargetUrl m_url;
    SshOptions m_options;
    std::shared_ptr<SshSession> m_session;
    std::shared_ptr<SshAgent> m_agent;
    std::string m_workdir;
    /// Directories made or seen by make_dirs: not looked at again (one SFTP round trip each
    /// per file otherwise); forgotten when a write fails and on reconnect.
    std::set<std::string> m_known_dirs;
    unsigned m_temp_counter = 0;
};

}  // namespace ncclsweep::remote
