#pragma once
// A log file that another process writes, read as a Process (for `ncclsweep watch --log`).
#include <chrono>
#include <memory>
#include <string>

#include "core/result.hpp"
#include "core/target.hpp"
#include "remote/line_splitter.hpp"

namespace ncclsweep::remote {

/// Whether to wait for more lines at the end of the file.
enum class Follow { no, yes };

/// Reads a log file line by line. Without following, `exited` (status 0) at end of file; with
/// following, it waits for new lines (like tail -f, also across truncation) until kill().
class LogFollower final : public Process {
public:
    /// Opens `path`; bad_input when it cannot be read.
    static Result<std::unique_ptr<LogFollower>> open(const std::string& path, Follow follow,
                                                     std::size_t line_limit = k_default_line_limit);
    ~LogFollower() override;
    LogFollower(const LogFollower&) = delete;
    LogFollower& operator=(const LogFollower&) = delete;

    PollState poll(std::chrono::milliseconds wait, OutputLine& line) override;
    /// Stops following (nothing to signal: the writer is not ours).
    void kill(std::chrono::milliseconds grace) override;
    [[nodiscard]] std::optional<ExitInfo> exit_info() const override { return m_exit; }

private:
    LogFollower(int fd, std::string path, Follow follow, std::size_t line_limit);
    bool read_some();

    int m_fd;
    std::string m_path;
    Follow m_follow;
    LineSplitter m_splitter;
    LineQueue m_lines;
    std::optional<ExitInfo> m_exit;
    bool m_stopped = false;
    long long m_offset = 0;
};

}  // namespace ncclsweep::remote
