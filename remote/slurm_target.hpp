#pragma once
// SlurmTarget: runs a sweep's experiments as the tasks of one Slurm job array, from the login
// node. Files go to the per-sweep work directory (a filesystem the nodes share); each task runs
// one command and writes its stdout, stderr and exit status to files there, which ncclsweep
// follows live. State comes from one `squeue` per poll round for all tasks, then `sacct` (or
// `scontrol show job` without accounting) for tasks that left the queue without a status.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/spec/spec.hpp"
#include "core/target.hpp"
#include "remote/slurm_pending.hpp"
#include "remote/slurm_state.hpp"
#include "remote/slurm_workdir.hpp"

namespace ncclsweep::remote {

/// Runs Slurm's client commands (sbatch, squeue, sacct, scontrol, scancel); tests script it.
class SlurmCommands {
public:
    /// What a command printed and how it exited.
    struct Output {
        int exit_code = 0;
        std::string out, err;
    };
    virtual ~SlurmCommands() = default;
    /// Runs `argv` (no shell) to its end. infrastructure when it cannot be started or runs for
    /// longer than a minute; a non-zero exit is an Output, not an error.
    virtual Result<Output> run(const std::vector<std::string>& argv) = 0;
};

/// Runs the commands on this machine (the login node) through `login`'s start().
[[nodiscard]] std::unique_ptr<SlurmCommands> login_node_commands(Target& login);

/// Settings of a SlurmTarget.
struct SlurmOptions {
    std::string partition;
    SlurmSpec spec;  ///< array limit, gres, time, account, extra sbatch options, poll
    std::string job_name = "ncclsweep";
    /// Raised by Ctrl-C: a start() waiting for its task to leave the queue gives up.
    const std::atomic<bool>* stop = nullptr;
    /// How often a task's output and status files are read.
    std::chrono::milliseconds follow_interval{50};
    /// After a task left the queue, how long its status file may take to appear (a shared
    /// filesystem's attribute cache) before Slurm's final state is used instead.
    std::chrono::milliseconds status_grace{1500};
    int slots_without_limit = 16;  ///< experiments followed at once when array_limit is unset
    /// The work directory root as configured (target.workdir; "" = ./.ncclsweep/work).
    std::string workdir_root;
    /// After Slurm says a task ended on its own, how long nothing it wrote (output, status) may
    /// be missing here before the work directory is judged not shared with its node.
    std::chrono::milliseconds shared_check_grace{10000};
    /// The filesystem under a path (statfs; tests fake it).
    std::function<Result<FilesystemInfo>(const std::string&)> filesystem_of;
    /// This host's short name, as a partition's node list would name it (tests fake it).
    std::function<std::string()> this_host;
    /// Where warnings for people go (stderr's log by default).
    std::function<void(const std::string&)> warn;
    /// The time its polls, graces and pending_timeout read and its waits sleep on; nullptr =
    /// the steady clock (tests hand in a tests/support/manual_clock.hpp clock).
    const Clock* clock = nullptr;
};

/// Counters for benchmarks and tests.
struct SlurmCounters {
    int sbatch_calls = 0, squeue_calls = 0, final_state_calls = 0, scancel_calls = 0;
};

/// Where a task's files are.
struct SlurmTaskFiles {
    std::string out, err, status;
};

/// What the target knows of a task right now.
struct TaskObservation {
    bool live = true;                ///< still in the queue (or too new to be listed)
    std::string state;               ///< squeue's state while live
    std::optional<TaskFinal> final;  ///< Slurm's final state once it left the queue, if known
};

/// A Slurm partition as a Target (thread-safe: several slots follow tasks at once).
class SlurmTarget final : public Target {
public:
    /// `login` holds the files and runs the commands (a LocalTarget on the login node).
    SlurmTarget(std::unique_ptr<Target> login, std::unique_ptr<SlurmCommands> commands, SlurmOptions options);
    ~SlurmTarget() override;

    [[nodiscard]] std::string describe() const override { return "slurm://" + m_options.partition; }
    Result<std::string> prepare_workdir(const std::string& sweep_id) override;
    Result<void> put_file(const std::string& path, const std::string& content) override;
    /// Follows the task submitted for command.batch_key, once it left PENDING; a command
    /// without a key (or whose task already ran: a retry) is submitted as a task of its own.
    Result<std::unique_ptr<Process>> start(const Command& command) override;
    /// Runs on the login node.
    Result<std::string> capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) override;
    [[nodiscard]] int slots() const override;
    [[nodiscard]] bool schedules_batches() const override { return true; }
    /// One job array for every item whose earlier task (a resume) is neither still in the
    /// queue nor finished with a status file; those are followed again instead.
    Result<std::vector<std::string>> submit(const std::vector<BatchItem>& items) override;
    /// scancel of every job array of this run (its unfinished tasks end).
    void cancel_all() override;
    /// The work directory root can be created and written, and its filesystem is one the
    /// partition's nodes can see (judge_workdir; one `sinfo` tells whether this host is the
    /// partition's only node).
    Result<TargetFindings> check_before_sweep() override;
    /// The first halt() given, if any.
    [[nodiscard]] std::optional<Error> halt_reason() const override;
    /// Stops the sweep for `why` (the first reason given stays): start() waits no more, the
    /// sweep loop retries nothing.
    void halt(Error why);
    /// Makes this node's view of the task files' directory current (a file created and removed
    /// there: an NFS client then drops what it cached of the directory).
    void refresh_task_directory();

    /// squeue/sacct/... calls so far.
    [[nodiscard]] SlurmCounters counters() const;

    // ---- used by the task processes ----
    /// The state of `task`, from at most one squeue per poll interval for all tasks.
    TaskObservation observe(const std::string& task);
    /// scancel of one task.
    void cancel(const std::string& task);
    /// The files of `task` ("4242_3").
    [[nodiscard]] SlurmTaskFiles files_of(const std::string& task) const;
    [[nodiscard]] const SlurmOptions& options() const { return m_options; }
    /// SlurmOptions::clock, or the steady clock.
    [[nodiscard]] const Clock& clock() const { return clock_or_steady(m_options.clock); }
    /// The per-sweep work directory ("" before prepare_workdir).
    [[nodiscard]] const std::string& workdir() const { return m_workdir; }

private:
    /// Writes the task scripts and the array script, runs sbatch; returns the task ids.
    Result<std::vector<std::string>> submit_array(const std::vector<const Command*>& commands);
    Result<std::string> task_script(const Command& command) const;
    void refresh_locked(bool force);
    /// halt() with m_mutex held.
    void halt_locked(Error why);
    void ask_final_locked(const std::string& job);
    bool stopping() const;

    std::unique_ptr<Target> m_login;
    std::unique_ptr<SlurmCommands> m_commands;
    SlurmOptions m_options;
    std::string m_workdir;
    mutable std::mutex m_mutex;
    std::map<std::string, std::string> m_task_of_key;  ///< batch key -> task id
    std::set<std::string> m_consumed;                  ///< keys whose task a start() followed
    std::set<std::string> m_jobs;                      ///< array job ids of this run with tasks not yet ended
    std::map<std::string, QueuedTask> m_queue;         ///< the last squeue
    std::chrono::steady_clock::time_point m_last_refresh{};
    std::map<std::string, std::chrono::steady_clock::time_point> m_submitted_at;  ///< by job id
    std::map<std::string, TaskFinal> m_finals;                                    ///< final states by task id
    std::map<std::string, std::chrono::steady_clock::time_point> m_final_asked;   ///< by job id
    PendingWatch m_pending;
    std::optional<Error> m_halt;  ///< guarded by m_mutex
    std::atomic<bool> m_halted{false};
    bool m_have_sacct = true;
    int m_batches = 0;
    SlurmCounters m_counters;
    std::atomic<bool> m_cancelled{false};
};

/// True when `path` exists (a task's output or status file on the shared filesystem).
[[nodiscard]] bool task_file_exists(const std::string& path);

/// The id of the job array a task belongs to ("4242_3" -> "4242").
[[nodiscard]] std::string job_of(const std::string& task);

}  // namespace ncclsweep::remote
