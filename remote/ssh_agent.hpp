#pragma once
// The client side of ncclsweep's agent (remote/agent_script): one exec channel per connection
// whose login shell runs k_agent_command once; every command of the sweep is then a request on
// that channel, so the user's login shell and its start-up files run once per connection, not
// once per command, and never see a value of the spec.
#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "remote/agent_script.hpp"
#include "remote/ssh_session.hpp"

namespace ncclsweep::remote {

/// The agent of one connection.
class SshAgent {
public:
    /// What the agent said about one command.
    struct Run {
        std::optional<long> pgid;   ///< its process group (`started`)
        std::optional<int> status;  ///< sh's status of its leader (`exit`)
        bool group_alive = false;   ///< others of its group still ran when the leader ended
        bool killed = false;        ///< a kill request finished (`killed`)
    };

    /// Opens the channel, has the login shell run k_agent_command, sends the agent's source and
    /// waits up to options.login_timeout for its banner. infrastructure error when it does not
    /// come: the message names the login shell (from /etc/passwd, over SFTP), what it printed
    /// and what to do.
    static Result<std::shared_ptr<SshAgent>> start(std::shared_ptr<SshSession> session,
                                                   const SshOptions& options);
    ~SshAgent();
    SshAgent(const SshAgent&) = delete;
    SshAgent& operator=(const SshAgent&) = delete;

    /// Writes `script` to the spool over SFTP, asks the agent to run it and waits (up to the
    /// connect timeout) for it to start; returns its id. infrastructure error when the agent or
    /// the connection is gone.
    Result<long> run(const std::string& script);
    /// Sends one request line (without newline); false when the agent or connection is gone.
    bool send(const std::string& request);
    /// Reads and applies what the agent wrote; false when the agent or connection is gone.
    bool pump();
    /// Waits up to `wait` for traffic on the connection, then pump().
    bool wait(std::chrono::milliseconds wait);
    /// One request and its answer within `limit` (a `ping`): true when the agent answered.
    bool round_trip(std::chrono::milliseconds limit);
    /// The state of command `id`, nullptr when unknown.
    [[nodiscard]] const Run* find(long id) const;
    /// Drops command `id` here and removes its files on the host.
    void forget(long id);
    /// Path of command `id`'s file with `suffix` ("out", "err", "sh") in the spool.
    [[nodiscard]] std::string file_of(long id, const char* suffix) const;
    /// False once the agent or the connection is gone (lost_reason() says why).
    [[nodiscard]] bool alive() const { return m_lost_reason.empty() && m_session->connected(); }
    /// Why the agent is gone.
    [[nodiscard]] std::string lost_reason() const;
    /// The connection.
    [[nodiscard]] const std::shared_ptr<SshSession>& session() const { return m_session; }
    /// What the agent said when it started.
    [[nodiscard]] const AgentBanner& banner() const { return m_banner; }

private:
    SshAgent(std::shared_ptr<SshSession> session, ssh_channel channel, SshOptions options);
    static void on_exit_status(ssh_session, ssh_channel, int status, void* self);
    /// Reads what arrived on both streams into m_out_text / m_err_tail; false on failure.
    bool read_channel();
    /// Complete stdout lines, taken from m_out_text.
    bool next_line(std::string& line);
    void apply(const std::string& line);
    void mark_lost(const std::string& reason);
    /// The error when the banner did not come.
    Error not_started(const std::string& why, const std::deque<std::string>& printed);

    std::shared_ptr<SshSession> m_session;
    ssh_channel m_channel;
    ssh_channel_callbacks_struct m_callbacks{};
    SshOptions m_options;
    AgentBanner m_banner;
    std::string m_out_text;              ///< stdout not yet split into lines
    std::deque<std::string> m_err_tail;  ///< its last stderr lines (for errors)
    std::string m_err_text;
    std::map<long, Run> m_runs;
    long m_next_id = 0;
    long m_next_ping = 0;
    long m_last_pong = 0;
    std::optional<int> m_exit_status;  ///< the agent itself ended
    std::string m_lost_reason;
};

}  // namespace ncclsweep::remote
