#pragma once
// One Slurm task followed as a Process: its stdout and stderr files are read as they grow
// (every few tens of milliseconds, so the watcher's verdicts stay within a second), its end
// comes from the status file the task writes, or from Slurm when it left the queue without one.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/target.hpp"
#include "remote/log_follower.hpp"
#include "remote/slurm_target.hpp"

namespace ncclsweep::remote {

/// A task of a SlurmTarget. kill() is scancel; a task Slurm ended for reasons of its own
/// (node failure, preemption, a cancel by someone else) is `lost`, one it ended at its time
/// limit or for its memory `exited` with scheduler_end() set. A task Slurm says ended on its
/// own while nothing it wrote (output, status) ever appeared here is `lost` and halts the
/// target: the work directory is not shared with its node.
class SlurmTaskProcess final : public Process {
public:
    SlurmTaskProcess(SlurmTarget& target, std::string task);
    PollState poll(std::chrono::milliseconds wait, OutputLine& line) override;
    void kill(std::chrono::milliseconds grace) override;
    [[nodiscard]] std::optional<ExitInfo> exit_info() const override { return m_exit; }
    [[nodiscard]] std::string lost_reason() const override { return m_lost_reason; }
    [[nodiscard]] std::optional<SchedulerEnd> scheduler_end() const override { return m_scheduler_end; }
    [[nodiscard]] std::string scheduler_task() const override { return m_task; }

private:
    bool read_output(OutputLine& line, bool to_end);
    void open_followers();
    void check_end();

    SlurmTarget& m_target;
    std::string m_task;
    SlurmTaskFiles m_files;
    std::unique_ptr<LogFollower> m_out, m_err;
    bool m_out_done = false, m_err_done = false;
    bool m_killed = false;
    bool m_ending = false;  ///< the end is known; the output is read to its end first
    std::optional<ExitInfo> m_exit, m_pending_exit;
    bool m_lost = false;
    std::string m_lost_reason;
    std::optional<SchedulerEnd> m_scheduler_end;
    std::optional<std::chrono::steady_clock::time_point> m_gone_since;
    bool m_view_refreshed = false;  ///< the task directory was refreshed before judging it unshared
};

}  // namespace ncclsweep::remote
