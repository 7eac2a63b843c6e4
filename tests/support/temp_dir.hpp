#pragma once
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace ncclsweep::test {

/// A fresh directory under $TMPDIR, removed (recursively) when the object goes away.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    /// The directory's path.
    [[nodiscard]] const std::filesystem::path& path() const { return m_path; }
    /// Writes `text` to `name` inside the directory and returns the full path.
    std::filesystem::path write(const std::string& name, const std::string& text) const;

private:
    std::filesystem::path m_path;
};

/// Reads a whole file; empty string when it cannot be read.
std::string read_file(const std::filesystem::path& path);

/// Output and exit status of a command run through fork/exec (no shell unless argv says so).
struct CommandResult {
    int exit_code = -1;      ///< exit status, or 128+signal
    std::string out;         ///< stdout
    std::string err;         ///< stderr
    bool timed_out = false;  ///< killed (with its process group) after the timeout
};

/// How long run_command waits by default before it kills the command's process group.
inline constexpr std::chrono::seconds k_command_timeout{600};

/// Runs argv (argv[0] looked up in PATH) in a process group of its own, optionally feeding
/// `input` on stdin and adding `env` (NAME=value entries) to the inherited environment. After
/// `timeout` the group is killed (SIGKILL), `timed_out` is set and a note ends `err`; a test
/// then fails on its exit status instead of hanging CTest.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input = {},
                          const std::vector<std::string>& env = {},
                          std::chrono::seconds timeout = k_command_timeout);

/// Path of a built binary (e.g. "cli/ncclsweep", "engine/tpverify") in the build tree.
std::filesystem::path binary_path(const std::string& relative);
/// Path of a file in the source tree.
std::filesystem::path source_path(const std::string& relative);

}  // namespace ncclsweep::test
