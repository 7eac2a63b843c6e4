#pragma once
// This machine's host name, one function for every part that records or compares it, and
// whether a recorded process of this host still runs.
#include <string>

namespace ncclsweep {

/// gethostname(2) as the kernel gives it ("" when it cannot be read).
[[nodiscard]] std::string host_name();
/// The same up to the first '.', as Slurm names its nodes ("" when it cannot be read).
[[nodiscard]] std::string short_host_name();

/// Who process `pid` of this host is, beyond its number: "<boot id>:<start time in clock ticks
/// since boot>" from /proc, so a pid reused by another program (or after a reboot) reads
/// differently. "" when /proc cannot tell (no such process, no /proc).
[[nodiscard]] std::string process_identity(long pid);

/// What probe_process found.
enum class ProcessLiveness {
    running,  ///< the process exists, is not a zombie and (when an identity was given) is that one
    gone,     ///< no such process, a zombie (exited, not yet reaped), or the pid now names another
    unknown,  ///< nothing can be told (no /proc and the pid exists)
};

/// Whether process `pid` of this host is still the live process `identity` (process_identity
/// when it was recorded; "" = not recorded: any live, non-zombie process with that pid counts).
[[nodiscard]] ProcessLiveness probe_process(long pid, const std::string& identity);

/// The short name of process `pid` (/proc/PID/comm), "" when it cannot be read.
[[nodiscard]] std::string process_name(long pid);

}  // namespace ncclsweep
