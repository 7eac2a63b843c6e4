#pragma once
// Where experiments run. Declared in core/ so the sweep loop depends only on this interface;
// remote/ implements it (LocalTarget, SshTarget) and tests use fakes.
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.hpp"
#include "core/result.hpp"

namespace ncclsweep {

/// Which stream a line came from.
enum class Stream { out, err };

/// One line of output with the time it was read. Lines longer than the target's limit are
/// cut (the rest of the line is dropped, `truncated` set); bytes are passed through as-is.
struct OutputLine {
    Stream stream = Stream::out;
    std::string text;  ///< without the trailing newline
    std::chrono::steady_clock::time_point when;
    bool truncated = false;
};

/// How a process ended.
struct ExitInfo {
    int exit_code = 0;  ///< exit status when it exited
    int signal = 0;     ///< terminating signal, 0 if it exited
    /// True when it exited with status 0.
    [[nodiscard]] bool success() const { return signal == 0 && exit_code == 0; }
};

/// What a poll of a running process returned.
enum class PollState {
    line,     ///< `line` holds the next output line
    timeout,  ///< nothing arrived within the wait
    exited,   ///< all output was read and the process has been reaped
    lost,     ///< the connection to the host was lost (infrastructure failure)
};

/// Why a batch scheduler ended a task itself (the command did not end on its own).
struct SchedulerEnd {
    std::string state;    ///< the scheduler's word: TIMEOUT, OUT_OF_MEMORY
    std::string message;  ///< for people: what happened and what to change
};

/// A started command (its whole process group).
class Process {
public:
    virtual ~Process() = default;
    /// Waits up to `wait` for the next line. Lines are returned in arrival order; after the
    /// last line and the exit, returns `exited` (then exit_info() is set).
    virtual PollState poll(std::chrono::milliseconds wait, OutputLine& line) = 0;
    /// Ends the whole process group: SIGTERM, then SIGKILL after `grace`; reaps it.
    virtual void kill(std::chrono::milliseconds grace) = 0;
    /// Exit status once poll() returned `exited`.
    [[nodiscard]] virtual std::optional<ExitInfo> exit_info() const = 0;
    /// Diagnostic text when poll() returned `lost`.
    [[nodiscard]] virtual std::string lost_reason() const { return {}; }
    /// Process group id of the command on its host (for checking that nothing of it still
    /// holds a GPU); nullopt when unknown.
    [[nodiscard]] virtual std::optional<long> process_group() const { return std::nullopt; }
    /// Set when a batch scheduler ended the task (time limit, memory) after poll() returned
    /// `exited`: the experiment then did not fail on its own.
    [[nodiscard]] virtual std::optional<SchedulerEnd> scheduler_end() const { return std::nullopt; }
    /// The scheduler's id of the task ("4242_3"), "" when not run by a scheduler.
    [[nodiscard]] virtual std::string scheduler_task() const { return {}; }
};

/// What to start.
struct Command {
    std::vector<std::string> argv;  ///< argv[0] = program (looked up in PATH)
    std::vector<Assignment> env;    ///< added to / overriding the target's environment
    std::string workdir;            ///< working directory ("" = the sweep work dir)
    /// Directory put first on PYTHONPATH for this command (env_delivery sitecustomize/both);
    /// the PYTHONPATH it would otherwise have is kept after it. "" = leave PYTHONPATH alone.
    std::string pythonpath_prepend;
    /// The key it was handed to Target::submit under ("" when it was not): a batch target
    /// attaches start() to the scheduler task it submitted for that key.
    std::string batch_key;
};

/// One command of a batch (Target::submit).
struct BatchItem {
    std::string key;  ///< unique within the run; Command::batch_key of the later start()
    Command command;
    std::string previous_task;  ///< the scheduler task it was given by an earlier run (a resume), or ""
};

/// What a target's own checks before a sweep found (recorded with the preflight).
struct TargetFindings {
    std::vector<std::string> notes;     ///< facts worth recording (a work directory's filesystem)
    std::vector<std::string> warnings;  ///< worth the user's attention; the sweep still runs
};

/// A host that runs experiments.
class Target {
public:
    virtual ~Target() = default;
    /// Human-readable name ("local", "ssh://user@host:22").
    [[nodiscard]] virtual std::string describe() const = 0;
    /// Creates (if needed) the per-sweep work directory named `sweep_id` under the target's root
    /// and returns its path on the host.
    virtual Result<std::string> prepare_workdir(const std::string& sweep_id) = 0;
    /// Takes the directory prepare_workdir returned with an exclusive lock, held until the
    /// target is destroyed (or the runner dies): two runners never deliver into one directory.
    /// `holder` says who takes it ("sweep 3 (UUID) of database PATH"); a directory another runner
    /// holds is refused (infrastructure) with that runner's holder text, its pid and host.
    virtual Result<void> lock_workdir(const std::string& holder) = 0;
    /// Writes `content` to `path` on the host (parent directories created), mode 0644.
    virtual Result<void> put_file(const std::string& path, const std::string& content) = 0;
    /// Reads file `path` on the host, at most `limit` bytes (the rest is not read); nullopt when
    /// there is no such file. infrastructure when it exists but cannot be read.
    virtual Result<std::optional<std::string>> get_file(const std::string& path, std::size_t limit) = 0;
    /// Starts `command` in a new process group/session.
    virtual Result<std::unique_ptr<Process>> start(const Command& command) = 0;
    /// Runs a short command to completion and returns its stdout (for preflight).
    virtual Result<std::string> capture(const std::vector<std::string>& argv,
                                        std::chrono::seconds timeout) = 0;
    /// After a Process reported `lost`: drops the connection and opens a new one, so the sweep
    /// can retry that experiment. Fails (infrastructure) when the host is still unreachable.
    virtual Result<void> reconnect() { return success(); }

    /// How many experiments may run at once (the sweep loop runs up to this many concurrently,
    /// each on slot_target(i)). A target with more than one slot serves its slots from several
    /// threads at once.
    [[nodiscard]] virtual int slots() const { return 1; }
    /// The target that slot `slot` (0 <= slot < slots()) runs its experiments on: a pool's host,
    /// otherwise this target itself.
    virtual Target& slot_target(int /*slot*/) { return *this; }
    /// True for a batch scheduler (Slurm): the sweep loop then calls submit() once first.
    [[nodiscard]] virtual bool schedules_batches() const { return false; }
    /// A batch scheduler (Slurm) takes every command of a run at once, before any start(), and
    /// returns the scheduler task of each (same order); start() of a command with that
    /// batch_key then follows its task. A target that starts commands one by one returns an
    /// empty vector. Errors: bad_input for a command it cannot express, infrastructure when the
    /// scheduler refuses.
    virtual Result<std::vector<std::string>> submit(const std::vector<BatchItem>& /*items*/) {
        return std::vector<std::string>{};
    }
    /// Ends every submitted task that has not ended (Ctrl-C, or the sweep stopped on an error).
    virtual void cancel_all() {}
    /// Checks of its own before a sweep (Slurm: the work directory is on a filesystem the
    /// compute nodes can share). Errors: bad_input when the target cannot work as configured,
    /// infrastructure when it cannot be checked.
    virtual Result<TargetFindings> check_before_sweep() { return TargetFindings{}; }
    /// Set once the target found something no retry gets past (Slurm: the work directory is
    /// not shared with the nodes; tasks left pending past target.slurm.pending_timeout): the
    /// sweep loop then stops with this error (infrastructure, resumable) instead of retrying
    /// the experiment, and records nothing for it.
    [[nodiscard]] virtual std::optional<Error> halt_reason() const { return std::nullopt; }
};

}  // namespace ncclsweep
