#pragma once
// What Slurm says about the tasks of our job arrays, parsed from its commands' output:
// `squeue -h -r -j IDS -o %i|%T|%r` while they are queued or running, then `sacct -n -P -X -j IDS
// -o JobID,State,ExitCode` (with accounting) or `scontrol -o show job ID` (without) once they
// left the queue. Pure functions: tests feed them output recorded from a real Slurm
// (tests/fixtures/slurm/).
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/target.hpp"

namespace ncclsweep::remote {

/// A task of a job array as squeue shows it.
struct QueuedTask {
    std::string state;   ///< PENDING, RUNNING, COMPLETING, ...
    std::string reason;  ///< why it is pending ("JobArrayTaskLimit", "Resources", "None", ...)
};

/// squeue's `%i|%T|%r` lines by task id ("4242_3"). A line that is not three fields is skipped;
/// a pending array's collapsed line ("4242_[3-5%2]") is expanded to its tasks.
[[nodiscard]] std::map<std::string, QueuedTask> parse_squeue(std::string_view text);

/// How Slurm says a task ended.
struct TaskFinal {
    std::string state;  ///< COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, PREEMPTED, ...
    std::string reason;
    ExitInfo exit;     ///< from ExitCode=CODE:SIGNAL
    std::string node;  ///< where it ran (NodeList; "" when Slurm did not say)
};

/// `scontrol -o show job ID` lines (one per task of the array) by task id.
[[nodiscard]] std::map<std::string, TaskFinal> parse_scontrol_jobs(std::string_view text);

/// `sacct -n -P -X -o JobID,State,ExitCode[,NodeList]` lines by task id ("CANCELLED by 0" -> CANCELLED).
[[nodiscard]] std::map<std::string, TaskFinal> parse_sacct(std::string_view text);

/// What an ended task means for the sweep.
enum class TaskVerdict {
    exited,          ///< the command ran and ended (its exit status is the outcome)
    time_limit,      ///< Slurm killed it at its time limit
    out_of_memory,   ///< Slurm killed it for exceeding its memory
    cancelled,       ///< scancel (ours, or someone else's)
    infrastructure,  ///< node failure, preemption, boot failure, ... : retried, never the setting's fault
};

/// The verdict for a final state.
[[nodiscard]] TaskVerdict verdict_of(const TaskFinal& final);

/// True while squeue still lists a task in this state (it has not ended).
[[nodiscard]] bool is_live_state(std::string_view state);

/// Parses sbatch --parsable output ("4242" or "4242;cluster"); bad when it is not a job id.
Result<std::string> parse_sbatch_job_id(std::string_view text);

}  // namespace ncclsweep::remote
