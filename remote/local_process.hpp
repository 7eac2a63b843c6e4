#pragma once
// The Process of LocalTarget (internal to remote/; tests use it through LocalTarget::start).
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/target.hpp"
#include "remote/line_splitter.hpp"
#include "remote/local_target.hpp"

namespace ncclsweep::remote {

/// What fork/exec needs, prepared before fork (the child allocates nothing).
struct SpawnPlan {
    std::string program;  ///< resolved path of argv[0]
    std::vector<std::string> argv;
    std::vector<std::string> envp;  ///< NAME=value
    std::string workdir;            ///< "" = inherit
};

/// Builds a SpawnPlan from a Command: environment = inherited + overrides (+ PYTHONPATH
/// prefix), argv[0] looked up in the resulting PATH. bad_input for an empty argv, a name with
/// '=' or NUL, a value with NUL; infrastructure when the program is not found.
Result<SpawnPlan> make_spawn_plan(const Command& command, const std::string& default_workdir);

/// A running local command (its whole process group).
class LocalProcess final : public Process {
public:
    /// Forks and execs `plan` in a new session; fails when fork/chdir/exec fails.
    static Result<std::unique_ptr<LocalProcess>> spawn(const SpawnPlan& plan, const ProcessOptions& options);
    ~LocalProcess() override;
    LocalProcess(const LocalProcess&) = delete;
    LocalProcess& operator=(const LocalProcess&) = delete;

    PollState poll(std::chrono::milliseconds wait, OutputLine& line) override;
    void kill(std::chrono::milliseconds grace) override;
    [[nodiscard]] std::optional<ExitInfo> exit_info() const override { return m_exit; }
    [[nodiscard]] std::optional<long> process_group() const override { return static_cast<long>(m_pid); }

private:
    LocalProcess(pid_t pid, int out_fd, int err_fd, const ProcessOptions& options);
    bool read_available(int& fd, LineSplitter& splitter);
    bool leader_exited();  ///< non-reaping check (waitid WNOWAIT)
    void finish_group();   ///< kills leftovers of the group, reaps the leader, closes pipes
    void close_pipes();

    pid_t m_pid;
    int m_out_fd;
    int m_err_fd;
    ProcessOptions m_options;
    LineSplitter m_out_splitter;
    LineSplitter m_err_splitter;
    LineQueue m_lines;
    std::optional<std::chrono::steady_clock::time_point> m_leader_exit_seen;
    std::optional<ExitInfo> m_exit;
};

}  // namespace ncclsweep::remote
