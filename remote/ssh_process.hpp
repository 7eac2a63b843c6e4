#pragma once
// The Process of SshTarget: one command run by the connection's agent (remote/ssh_agent), in
// its own session and process group on the host; its stdout and stderr followed over SFTP from
// the agent's spool as they grow, into the shared line splitter; signals and kill are requests
// to the agent. No exec channel, and so no login shell, per command.
#include <memory>
#include <optional>
#include <string>

#include "core/target.hpp"
#include "remote/line_splitter.hpp"
#include "remote/sftp_files.hpp"
#include "remote/ssh_agent.hpp"
#include "remote/ssh_session.hpp"

namespace ncclsweep::remote {

/// A command running on an ssh host.
class SshProcess final : public Process {
public:
    /// Has `agent` run `script` (from command_script) and waits until it started (its process
    /// group known). infrastructure error when the agent or the connection is gone.
    static Result<std::unique_ptr<SshProcess>> start(std::shared_ptr<SshAgent> agent,
                                                     const std::string& script, const SshOptions& options);
    ~SshProcess() override;
    SshProcess(const SshProcess&) = delete;
    SshProcess& operator=(const SshProcess&) = delete;

    PollState poll(std::chrono::milliseconds wait, OutputLine& line) override;
    void kill(std::chrono::milliseconds grace) override;
    [[nodiscard]] std::optional<ExitInfo> exit_info() const override { return m_exit; }
    [[nodiscard]] std::string lost_reason() const override { return m_lost_reason; }
    [[nodiscard]] std::optional<long> process_group() const override { return m_pgid; }

private:
    SshProcess(std::shared_ptr<SshAgent> agent, long id, const SshOptions& options);
    /// Reads what is new in both output files; false when the connection failed.
    bool read_output(bool& got_data);
    /// Reads both files to their current end; false when the connection failed.
    bool read_to_end();
    void mark_lost(const std::string& reason);
    /// The leader ended with `status`: reads the rest of the output and sets m_exit (or marks
    /// the process lost, see connection_survives).
    void finish(int status);
    /// For an exit by a teardown signal (KILL, HUP, TERM, PIPE) that this runner did not send:
    /// watches the connection for k_teardown_settle, then makes one round trip to the agent.
    /// False, and the process marked lost, when the connection went.
    bool connection_survives(int signal);

    std::shared_ptr<SshAgent> m_agent;
    long m_id;
    SshOptions m_options;
    SftpTail m_out;
    SftpTail m_err;
    LineSplitter m_out_splitter;
    LineSplitter m_err_splitter;
    LineQueue m_lines;
    std::optional<long> m_pgid;
    bool m_signal_sent = false;  ///< this runner signalled the group (kill, drain grace)
    std::optional<std::chrono::steady_clock::time_point> m_status_seen;
    std::chrono::milliseconds m_idle_wait{1};
    std::optional<ExitInfo> m_exit;
    bool m_lost = false;
    std::string m_lost_reason;
};

/// How long a command killed by a teardown signal nobody here sent waits for its connection
/// to fail before the exit counts as the command's own (docs/targets.md "Lost connections").
inline constexpr std::chrono::milliseconds k_teardown_settle{500};

/// Longest wait between two reads of a quiet command's output files: a line reaches the
/// watcher at most this late.
inline constexpr std::chrono::milliseconds k_output_poll_max{40};

/// True for the signals that tear a session down from outside (KILL, HUP, TERM, PIPE), as
/// opposed to a program's own faults (SEGV, ABRT, BUS, FPE, ILL).
[[nodiscard]] bool is_teardown_signal(int number);

}  // namespace ncclsweep::remote
