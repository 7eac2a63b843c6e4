#include "remote/slurm_process.hpp"

#include <fmt/format.h>

#include <fstream>
#include <thread>

namespace ncclsweep::remote {
namespace {

/// The exit status a task's status file holds; a shell reports a command killed by signal N
/// as 128 + N, read back as that signal.
std::optional<ExitInfo> read_status(const std::string& path) {
    std::ifstream in(path);
    int code = 0;
    if (!(in >> code)) return std::nullopt;
    if (code > 128 && code < 128 + 65) return ExitInfo{code, code - 128};
    return ExitInfo{code, 0};
}

}  // namespace

SlurmTaskProcess::SlurmTaskProcess(SlurmTarget& target, std::string task)
    : m_target(target), m_task(std::move(task)), m_files(target.files_of(m_task)) {}

void SlurmTaskProcess::open_followers() {
    if (!m_out && !m_out_done && task_file_exists(m_files.out)) {
        auto opened = LogFollower::open(m_files.out, Follow::yes);
        if (opened) m_out = std::move(*opened);
    }
    if (!m_err && !m_err_done && task_file_exists(m_files.err)) {
        auto opened = LogFollower::open(m_files.err, Follow::yes);
        if (opened) m_err = std::move(*opened);
    }
}

bool SlurmTaskProcess::read_output(OutputLine& line, bool to_end) {
    open_followers();
    auto read_one = [&](std::unique_ptr<LogFollower>& follower, bool& done, Stream stream) {
        if (done) return false;
        if (!follower) {
            if (to_end) done = true;  // the task never wrote (never started)
            return false;
        }
        PollState state = follower->poll(std::chrono::milliseconds(0), line);
        if (state == PollState::line) {
            line.stream = stream;
            return true;
        }
        if (state == PollState::exited) done = true;
        // At the end of what was written: stop following, so the next poll hands over a last
        // line without a newline and then reports the end.
        if (state == PollState::timeout && to_end) follower->kill(std::chrono::milliseconds(0));
        return false;
    };
    return read_one(m_err, m_err_done, Stream::err) || read_one(m_out, m_out_done, Stream::out);
}

void SlurmTaskProcess::check_end() {
    std::optional<ExitInfo> status;
    if (task_file_exists(m_files.status)) status = read_status(m_files.status);
    // An exit status is the command's own end, unless a signal ended it: that may have been
    // Slurm (a node failure, the time limit, a cancel), so Slurm's word on the task is awaited.
    if (status && (status->signal == 0 || m_killed)) {
        m_pending_exit = *status;
        m_ending = true;
        return;
    }
    TaskObservation seen = m_target.observe(m_task);
    if (seen.live) return;
    const auto now = m_target.clock().now();
    if (!m_gone_since) m_gone_since = now;
    // Not every end writes a status (a kill by Slurm does not); a shared filesystem may show
    // the one written a little late.
    if (now - *m_gone_since < m_target.options().status_grace) return;
    if (status && (!seen.final || verdict_of(*seen.final) == TaskVerdict::exited)) {
        m_pending_exit = *status;  // the command's own signal (a crash), Slurm says it just ended
        m_ending = true;
        return;
    }
    if (!seen.final) {
        if (m_killed) {
            m_pending_exit = ExitInfo{0, 15};
            m_ending = true;
            return;
        }
        m_lost = true;
        m_lost_reason = fmt::format(
            "Slurm task {} left the queue without writing an exit status, and Slurm no longer knows how it "
            "ended (no accounting, or past MinJobAge)",
            m_task);
        return;
    }
    const TaskFinal& final = *seen.final;
    const std::string why = final.reason.empty() || final.reason == "None" ? "" : " (" + final.reason + ")";
    switch (verdict_of(final)) {
        case TaskVerdict::exited:
            if (!status && !m_killed && !m_out && !task_file_exists(m_files.out)) {
                // Slurm says the task ran and ended on its own, yet nothing it wrote is here:
                // its node writes the work directory somewhere this node does not see.
                if (now - *m_gone_since < m_target.options().shared_check_grace || !m_view_refreshed) {
                    if (!m_view_refreshed) m_target.refresh_task_directory();
                    m_view_refreshed = true;
                    return;
                }
                const std::string message = fmt::format(
                    "slurm: Slurm says task {} ended ({}{}, exit {}:{}{}), yet nothing it wrote reached this "
                    "node: "
                    "neither {} nor {} exists here. The work directory {} is not on a filesystem that node "
                    "shares "
                    "with this one (or it is not mounted there). Set target.workdir to a directory on a "
                    "shared "
                    "filesystem (under your home or a /shared, /scratch or /lustre mount; `df -T DIR` shows "
                    "its "
                    "type), then continue the sweep with --resume",
                    m_task, final.state, why, final.exit.exit_code, final.exit.signal,
                    final.node.empty() ? "" : ", on node " + final.node, m_files.out, m_files.status,
                    m_target.workdir());
                m_target.halt(Error::infrastructure(message));
                m_lost = true;
                m_lost_reason = message;
                return;
            }
            m_pending_exit = final.exit;
            m_ending = true;
            return;
        case TaskVerdict::time_limit:
            m_pending_exit = ExitInfo{0, 15};
            m_scheduler_end = SchedulerEnd{
                final.state,
                fmt::format("Slurm ended task {} at its time limit (target.slurm.time {}): the experiment "
                            "needed longer; raise target.slurm.time",
                            m_task, m_target.options().spec.time)};
            m_ending = true;
            return;
        case TaskVerdict::out_of_memory:
            m_pending_exit = ExitInfo{0, 9};
            m_scheduler_end = SchedulerEnd{
                final.state,
                fmt::format("Slurm ended task {} for exceeding its memory (OUT_OF_MEMORY); ask for more "
                            "with target.slurm.sbatch, e.g. --mem=0",
                            m_task)};
            m_ending = true;
            return;
        case TaskVerdict::cancelled:
            if (m_killed) {
                m_pending_exit = final.exit.signal ? final.exit : ExitInfo{0, 15};
                m_ending = true;
                return;
            }
            m_lost = true;
            m_lost_reason = fmt::format("Slurm task {} was cancelled, not by this ncclsweep{}", m_task, why);
            return;
        case TaskVerdict::infrastructure:
            m_lost = true;
            m_lost_reason = fmt::format(
                "Slurm ended task {} with state {}{}: a failure of the cluster, not of the "
                "experiment",
                m_task, final.state, why);
            return;
    }
}

PollState SlurmTaskProcess::poll(std::chrono::milliseconds wait, OutputLine& line) {
    const auto deadline = m_target.clock().now() + wait;
    for (;;) {
        if (m_exit) return PollState::exited;
        if (m_lost) return PollState::lost;
        if (read_output(line, m_ending)) return PollState::line;
        if (m_ending) {
            if (m_out_done && m_err_done) m_exit = m_pending_exit;
            continue;
        }
        check_end();
        if (m_ending || m_lost) continue;
        const auto now = m_target.clock().now();
        if (now >= deadline) return PollState::timeout;
        m_target.clock().sleep_for(std::min<std::chrono::steady_clock::duration>(
            m_target.options().follow_interval, deadline - now));
    }
}

void SlurmTaskProcess::kill(std::chrono::milliseconds /*grace*/) {
    // Slurm has its own grace (KillWait) between SIGTERM and SIGKILL.
    if (m_killed || m_ending || m_exit || m_lost) return;
    m_killed = true;
    m_target.cancel(m_task);
}

}  // namespace ncclsweep::remote
