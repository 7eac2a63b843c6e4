#pragma once
// Where experiments run. Declared in core/ so the sweep loop depends only on this interface;
// remote/ implements it (LocalTarget, SshTarget) and tests use fakes.
#include <chrono>
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
    line,        ///< `line` holds the next output line
    timeout,     ///< nothing arrived within the wait
    exited,      ///< all output was read and the process has been reaped
    lost,        ///< the connection to the host was lost (infrastructure failure)
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
};

/// What to start.
struct Command {
    std::vector<std::string> argv;            ///< argv[0] = program (looked up in PATH)
    std::vector<Assignment> env;              ///< added to / overriding the target's environment
    std::string workdir;                      ///< working directory ("" = the sweep work dir)
    /// Directory put first on PYTHONPATH for this command (env_delivery sitecustomize/both);
    /// the PYTHONPATH it would otherwise have is kept after it. "" = leave PYTHONPATH alone.
    std::string pythonpath_prepend;
};

/// A host that runs experiments.
class Target {
public:
    virtual ~Target() = default;
    /// Human-readable name ("local", "ssh://user@host:22").
    [[nodiscard]] virtual std::string describe() const = 0;
    /// Creates (if needed) the per-sweep work directory and returns its path on the host.
    virtual Result<std::string> prepare_workdir(const std::string& sweep_id) = 0;
    /// Writes `content` to `path` on the host (parent directories created), mode 0644.
    virtual Result<void> put_file(const std::string& path, const std::string& content) = 0;
    /// Starts `command` in a new process group/session.
    virtual Result<std::unique_ptr<Process>> start(const Command& command) = 0;
    /// Runs a short command to completion and returns its stdout (for preflight).
    virtual Result<std::string> capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) = 0;
    /// After a Process reported `lost`: drops the connection and opens a new one, so the sweep
    /// can retry that experiment. Fails (infrastructure) when the host is still unreachable.
    virtual Result<void> reconnect() { return success(); }
};

}  // namespace ncclsweep
