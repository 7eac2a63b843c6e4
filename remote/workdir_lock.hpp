#pragma once
// What a work directory's lock file says about the runner holding it, shared by the targets
// that lock one (local and Slurm's login node with flock, ssh hosts with an exclusive create).
#include <string>

namespace ncclsweep::remote {

/// The name of the lock file in a work directory.
inline constexpr const char* k_workdir_lock_file = "ncclsweep.lock";

/// The lock file's text: `holder` (Target::lock_workdir), then this process's pid, host and
/// identity (core process_identity), one "key: value" line each.
[[nodiscard]] std::string lock_holder_text(const std::string& holder);

/// For a refused runner: "sweep 3 (UUID) of database PATH, run by pid 42 on host h" from a lock
/// file's text ("another runner" when the text is empty or unreadable).
[[nodiscard]] std::string describe_lock_holder(const std::string& text);

/// True when the lock file's runner ran on this host and is gone (exited, a zombie, or its pid
/// now names another process): its lock is stale. False when it runs or cannot be judged from
/// here (another host, no pid).
[[nodiscard]] bool lock_holder_gone(const std::string& text);

/// True when the lock file was written by this very process (lock_holder_text): several hosts
/// of a pool that share the work directory's filesystem see the one lock their runner took.
[[nodiscard]] bool lock_holder_is_this_process(const std::string& text);

}  // namespace ncclsweep::remote
