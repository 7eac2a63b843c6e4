#pragma once
// The Process of SshTarget: one exec channel; stdout and stderr read without blocking into the
// shared line splitter; kill through a second channel by remote process group.
#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "core/target.hpp"
#include "remote/line_splitter.hpp"
#include "remote/ssh_session.hpp"

namespace ncclsweep::remote {

/// A command running on an ssh host.
class SshProcess final : public Process {
public:
    /// Opens a channel, execs `line` (from remote_command_line) and waits for the wrapper's
    /// process-group handshake. infrastructure error when the channel or handshake fails.
    static Result<std::unique_ptr<SshProcess>> start(std::shared_ptr<SshSession> session,
                                                     const std::string& line, const SshOptions& options);
    ~SshProcess() override;
    SshProcess(const SshProcess&) = delete;
    SshProcess& operator=(const SshProcess&) = delete;

    PollState poll(std::chrono::milliseconds wait, OutputLine& line) override;
    void kill(std::chrono::milliseconds grace) override;
    [[nodiscard]] std::optional<ExitInfo> exit_info() const override { return m_exit; }
    [[nodiscard]] std::string lost_reason() const override { return m_lost_reason; }
    [[nodiscard]] std::optional<long> process_group() const override { return m_pgid; }

private:
    SshProcess(std::shared_ptr<SshSession> session, ssh_channel channel, const SshOptions& options);
    static void on_exit_status(ssh_session, ssh_channel, int status, void* self);
    static void on_exit_signal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*,
                               void* self);
    /// Reads what is available on both streams; false when the connection failed.
    bool pump(bool& got_data);
    bool wait_socket(std::chrono::milliseconds wait);
    void mark_lost(const std::string& reason);
    void finalize();
    /// For an exit by a teardown signal (KILL, HUP, TERM, PIPE) that this runner did not send:
    /// watches the connection for k_teardown_settle, then makes one round trip (opens and
    /// closes a channel). False, and the process marked lost, when the connection went.
    bool connection_survives();
    /// Runs `kill -SIG -- -PGID` on a second channel.
    bool signal_group(const char* signal);
    /// Runs `line` on a second channel of the same connection and waits up to `limit` for it.
    bool run_on_side_channel(const std::string& line, std::chrono::milliseconds limit);

    std::shared_ptr<SshSession> m_session;
    ssh_channel m_channel;
    ssh_channel_callbacks_struct m_callbacks{};
    SshOptions m_options;
    LineSplitter m_out_splitter;
    LineSplitter m_err_splitter;
    std::deque<OutputLine> m_lines;
    std::optional<long> m_pgid;
    std::optional<int> m_status;  ///< exit-status received
    std::optional<int> m_signal;  ///< exit-signal received (number)
    bool m_eof = false;
    bool m_signal_sent = false;  ///< this runner signalled the group (kill, drain grace)
    bool m_connection_checked = false;
    std::optional<std::chrono::steady_clock::time_point> m_status_seen;
    std::optional<ExitInfo> m_exit;
    bool m_lost = false;
    std::string m_lost_reason;
};

/// How long a command killed by a teardown signal nobody here sent waits for its connection
/// to fail before the exit counts as the command's own (docs/targets.md "Lost connections").
inline constexpr std::chrono::milliseconds k_teardown_settle{500};

/// True for the signals that tear a session down from outside (KILL, HUP, TERM, PIPE), as
/// opposed to a program's own faults (SEGV, ABRT, BUS, FPE, ILL).
[[nodiscard]] bool is_teardown_signal(int number);

/// Maps an SSH exit-signal name ("TERM", "SEGV") to its number (0 when unknown).
int signal_number(const std::string& name);

}  // namespace ncclsweep::remote
