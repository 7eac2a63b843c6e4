#pragma once
// LocalTarget: runs experiments on this machine (fork/exec in a new session/process group).
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/target.hpp"
#include "remote/line_splitter.hpp"

namespace ncclsweep::remote {

/// Tuning knobs shared by local and ssh processes.
struct ProcessOptions {
    std::size_t line_limit = k_default_line_limit;  ///< longest line kept per stream
    /// After the leader exits, how long output from leftover group members is still read
    /// before the rest of the group is killed and `exited` is reported.
    std::chrono::milliseconds drain_grace{1000};
};

/// Options of a LocalTarget.
struct LocalOptions {
    std::string workdir_root;  ///< "" = ./.ncclsweep/work
    ProcessOptions process;
};

/// Runs commands on this machine. Each command gets its own session (setsid), stdout and
/// stderr through non-blocking pipes, and is killed as a whole group.
class LocalTarget final : public Target {
public:
    /// A target whose work directories live under `options.workdir_root`.
    explicit LocalTarget(LocalOptions options = {});
    /// Releases the work directory's lock.
    ~LocalTarget() override;
    LocalTarget(const LocalTarget&) = delete;
    LocalTarget& operator=(const LocalTarget&) = delete;
    /// "local".
    [[nodiscard]] std::string describe() const override;
    /// Creates <root>/<sweep_id> and returns its absolute path; bad_input for an id with '/'.
    Result<std::string> prepare_workdir(const std::string& sweep_id) override;
    /// flock(LOCK_EX) of <workdir>/ncclsweep.lock (released by the kernel when this process
    /// ends, however it ends); the holder's text, pid and host are written into it for a second
    /// runner's refusal.
    Result<void> lock_workdir(const std::string& holder) override;
    /// Atomic write: a new temporary file next to `path` (O_EXCL|O_NOFOLLOW: never an existing
    /// file or a link planted there), then rename; parents are created.
    Result<void> put_file(const std::string& path, const std::string& content) override;
    /// Reads a regular file (O_NOFOLLOW|O_NONBLOCK: a FIFO or a link is refused, never waited on).
    Result<std::optional<std::string>> get_file(const std::string& path, std::size_t limit) override;
    /// fork/exec of command.argv (PATH search uses command.env's PATH when it sets one).
    Result<std::unique_ptr<Process>> start(const Command& command) override;
    /// Runs argv to completion and returns its stdout (see remote::capture_output).
    Result<std::string> capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) override;

private:
    LocalOptions m_options;
    std::string m_workdir;  ///< the last prepared work directory ("" before prepare_workdir)
    int m_lock_fd = -1;     ///< the work directory's lock file while held
};

/// Reads the regular file `path` of this machine, at most `limit` bytes; nullopt when it does
/// not exist. A link, a FIFO or a device is refused (infrastructure), never waited on; `who`
/// starts the messages.
Result<std::optional<std::string>> read_regular_file(const std::string& path, std::size_t limit,
                                                     const std::string& who);

/// Checks that `id` can name a work directory (no '/', not "." or "..", not empty).
Result<void> check_sweep_id(const std::string& id);

}  // namespace ncclsweep::remote
