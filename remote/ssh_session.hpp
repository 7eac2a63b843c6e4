#pragma once
// One authenticated libssh connection (plus its SFTP subsystem), shared by every channel of a
// sweep. Host keys are verified against known_hosts before any authentication.
#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "remote/local_target.hpp"
#include "remote/target_url.hpp"

namespace ncclsweep::remote {

/// Options of an ssh target (from the spec's target: block and CLI flags).
struct SshOptions {
    std::string known_hosts;                      ///< "" = ~/.ssh/known_hosts
    bool accept_new_host_key = false;             ///< add an unknown host's key (never a changed one)
    std::optional<std::string> identity_file;     ///< private key; unset = ssh-agent + ~/.ssh/id_*
    std::chrono::seconds connect_timeout{15};     ///< connect, handshake and blocking requests
    std::chrono::seconds keepalive_interval{15};  ///< SSH_MSG_IGNORE this often while waiting
    /// How long the login shell (and its start-up files) may take to start the agent, once per
    /// connection (docs/targets.md "The agent").
    std::chrono::seconds login_timeout{60};
    std::string workdir_root;  ///< "" = .ncclsweep/work in the remote home
    ProcessOptions process;
};

/// An open, verified, authenticated connection.
class SshSession {
public:
    /// Connects, verifies the host key, authenticates. infrastructure errors name the URL and
    /// say what to do (unknown/changed host key, authentication, unreachable).
    static Result<std::shared_ptr<SshSession>> open(const TargetUrl& url, const SshOptions& options);
    ~SshSession();
    SshSession(const SshSession&) = delete;
    SshSession& operator=(const SshSession&) = delete;

    /// The libssh session (valid while this object lives).
    [[nodiscard]] ssh_session raw() const { return m_session; }
    /// "ssh://user@host:port".
    [[nodiscard]] const std::string& name() const { return m_name; }
    /// The user logged in as.
    [[nodiscard]] const std::string& user() const { return m_user; }
    /// True while the transport is up.
    [[nodiscard]] bool connected() const;
    /// libssh's last error text.
    [[nodiscard]] std::string last_error() const;
    /// The SFTP subsystem, opened on first use and again when its channel has closed.
    Result<sftp_session> sftp();
    /// Drops the SFTP subsystem when its channel has closed while the connection is up (its
    /// server process was killed); true when it did, so the caller may retry once. Files opened
    /// on it stay valid to close (it is freed with this session), and sftp_generation() changes.
    bool drop_dead_sftp();
    /// Changes each time drop_dead_sftp() dropped a subsystem: a file opened under an older
    /// generation must be opened again.
    [[nodiscard]] unsigned sftp_generation() const { return m_sftp_generation; }
    /// Sends a keepalive (SSH_MSG_IGNORE) when `keepalive_interval` passed since the last one;
    /// false when the write failed (the connection is gone).
    bool keepalive_if_due();
    /// Waits up to `wait` for traffic and processes it (data into channel buffers, exit
    /// status callbacks); false when the connection failed.
    bool wait(std::chrono::milliseconds wait);

private:
    SshSession(ssh_session session, std::string name, std::string user, std::chrono::seconds keepalive);
    ssh_session m_session;
    sftp_session m_sftp = nullptr;
    std::vector<sftp_session> m_dead_sftp;  ///< dropped subsystems, freed with the session
    unsigned m_sftp_generation = 0;
    ssh_event m_event = nullptr;
    std::string m_name;
    std::string m_user;
    std::chrono::seconds m_keepalive;
    std::chrono::steady_clock::time_point m_last_keepalive;
};

/// The default known_hosts path: $HOME/.ssh/known_hosts.
std::string default_known_hosts();

}  // namespace ncclsweep::remote
