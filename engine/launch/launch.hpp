#pragma once
// One process per rank: tpverify starts its N rank processes itself, hands them NCCL's unique id
// over pipes, and ends every rank as soon as one fails (POSIX; no CUDA or NCCL here).
#include <cstddef>
#include <string>
#include <vector>

namespace tpverify {

/// Environment variable that tells a rank process where its bootstrap pipes are:
/// "<read fd>,<write fd>" (rank 0 writes the unique id to its write fd; the others read it
/// from their read fd; -1 where unused).
inline constexpr const char* k_bootstrap_env = "TPVERIFY_BOOTSTRAP_FDS";
/// Bytes of the id handed over (sizeof(ncclUniqueId); the CUDA side static_asserts it).
inline constexpr std::size_t k_unique_id_bytes = 128;

/// The two descriptors of $TPVERIFY_BOOTSTRAP_FDS; false when unset or malformed.
struct BootstrapFds {
    int read_fd = -1;
    int write_fd = -1;
};
bool parse_bootstrap_fds(const char* value, BootstrapFds& out);

/// Reads exactly `size` bytes from `fd` within `timeout_s` seconds; error text on failure
/// (end of file, timeout, read error).
std::string read_exact(int fd, void* data, std::size_t size, double timeout_s);
/// Writes all `size` bytes to `fd`; error text on failure.
std::string write_all(int fd, const void* data, std::size_t size);

/// What to start: `exe` with `args` (argv[1..]) plus "--rank R --nranks N" for each rank.
struct LaunchSpec {
    std::string exe;
    std::vector<std::string> args;
    int nranks = 1;
    double bootstrap_timeout_s = 120;  ///< rank 0 must hand over the id within this
    /// Where the ranks' output goes, line by line: their stdout and NCCL debug output to
    /// `out_fd`, their stderr to `err_fd`.
    int out_fd = 1, err_fd = 2;
};

/// Environment variable a rank process reads to know the launcher relays its output (it then
/// line-buffers its stdout).
inline constexpr const char* k_relayed_env = "TPVERIFY_RELAYED";

/// How the ranks ended.
struct LaunchOutcome {
    int exit_status = 0;   ///< 0 all ranks ok; else the failing rank's status (signals: 1)
    int failed_rank = -1;  ///< the first rank that failed (-1: none, or the launcher itself)
    std::string message;   ///< for stderr when something failed
};

/// Starts the ranks, relays rank 0's unique id to the others, and waits. Each rank's stdout,
/// stderr and NCCL debug output (NCCL_DEBUG_FILE=/dev/fd/N, a pipe, unless the caller set
/// NCCL_DEBUG_FILE; NCCL writes it line-buffered) come to the launcher through pipes and leave
/// it whole lines at a time, so lines of different ranks never mix: rank 0's stdout as it is
/// (the event stream), everything else prefixed "[rank R] ". What a rank wrote before it died,
/// even by SIGKILL, is in its pipe and is relayed; a last line without a newline gets one. The
/// first rank to exit with a non-zero status or a signal ends all the others (SIGKILL) at once;
/// its status is the outcome. Ranks also get SIGKILL if the launcher dies (PR_SET_PDEATHSIG).
LaunchOutcome launch_ranks(const LaunchSpec& spec);

/// This program's own executable path (/proc/self/exe), or `argv0` where that is unreadable.
std::string self_exe(const char* argv0);

}  // namespace tpverify
