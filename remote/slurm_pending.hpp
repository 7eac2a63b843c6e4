#pragma once
// Tasks that no node starts: from one squeue round to the next, which of the sweep's pending
// tasks wait for a reason that does not clear as the queue moves (a drained node, a partition's
// limit, an account or QOS the partition refuses, ...), said once per change of reason; and how
// long tasks have waited with none of the sweep's running, for target.slurm.pending_timeout.
// Pure: the caller hands it each squeue answer and the time (tests use a fake clock).
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "remote/slurm_state.hpp"

namespace ncclsweep::remote {

/// True when a pending task's reason clears as the queue moves by itself: Priority, Resources,
/// the array's own throttle (JobArrayTaskLimit), BeginTime, Dependency, and the limits on how
/// much runs at once (AssocGrp*, QOSGrp*, per-user, per-account, max jobs). False for a reason
/// that needs a person (ReqNodeNotAvail, PartitionDown, PartitionNodeLimit, BadConstraints,
/// InvalidAccount, a hold, a per-job limit, ...) and for any text it does not know (Slurm also
/// prints descriptions, e.g. "Nodes required for job are DOWN, DRAINED or ...").
[[nodiscard]] bool pending_reason_clears_itself(std::string_view reason);

/// Task ids grouped by job as Slurm writes them: {"7_0","7_1","7_2","7_5","8_0"} -> "7_[0-2,5] 8_0".
[[nodiscard]] std::string compact_tasks(const std::vector<std::string>& tasks);

/// What one squeue round told PendingWatch.
struct PendingNews {
    std::vector<std::string> warnings;   ///< one per reason newly given to some tasks
    std::optional<std::string> expired;  ///< set once tasks waited past the timeout with none running
    std::vector<std::string> stuck;      ///< the pending tasks when it expired
};

/// Follows the sweep's pending tasks across squeue rounds. A reason reworded is not a change:
/// "ReqNodeNotAvail, UnavailableNodes:n1", then "..., UnavailableNodes:n1,n2", then Slurm's
/// description of it ("Nodes required for job are DOWN, DRAINED ...") are one warning.
class PendingWatch {
public:
    using Clock = std::chrono::steady_clock;
    /// `timeout`: how long tasks may wait with none of the sweep's running (nullopt: forever).
    PendingWatch(std::string partition, std::optional<std::chrono::milliseconds> timeout);
    /// Takes one squeue answer (every task of the sweep still queued) seen at `now`.
    PendingNews update(const std::map<std::string, QueuedTask>& queue, Clock::time_point now);

private:
    std::string m_partition;
    std::optional<std::chrono::milliseconds> m_timeout;
    std::map<std::string, std::string> m_reason_of;  ///< pending task -> its reason last round
    std::optional<Clock::time_point> m_idle_since;   ///< tasks pending and none running since
    bool m_expired = false;
};

}  // namespace ncclsweep::remote
