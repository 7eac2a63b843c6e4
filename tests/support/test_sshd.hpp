#pragma once
// One throwaway OpenSSH server on 127.0.0.1 per test (scripts/test-sshd.sh), for the remote
// unit tests and the end-to-end tests alike, with the process helpers fault tests use.
#include <pwd.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/catch.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/temp_dir.hpp"

namespace ncclsweep::test {

/// A throwaway sshd on 127.0.0.1 (scripts/test-sshd.sh) for one test; `available` is false
/// (and the test marked skipped, see skip.hpp) when sshd is not installed.
struct TestSshd {
    TempDir dir;
    int port = 0;
    bool available = false;
    TestSshd() { available = start(""); }
    ~TestSshd() { stop(); }
    TestSshd(const TestSshd&) = delete;
    TestSshd& operator=(const TestSshd&) = delete;
    /// Starts the server (on `fixed_port` when given); false when sshd is missing.
    bool start(const std::string& fixed_port) {
        std::vector<std::string> argv{source_path("scripts/test-sshd.sh").string(), "start",
                                      dir.path().string()};
        if (!fixed_port.empty()) argv.push_back(fixed_port);
        auto r = run_command(argv);
        if (r.exit_code == 77) {
            skip_test(
                "sshd",
                "sshd is not installed (scripts/install-deps.sh --test installs openssh-server): " + r.err);
            return false;
        }
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        port = std::stoi(r.out);
        return true;
    }
    /// Kills the listener and every connection (as if the server crashed).
    void stop() { run_command({source_path("scripts/test-sshd.sh").string(), "stop", dir.path().string()}); }
    /// Kills only the per-connection sshd processes; the listener stays and accepts new ones.
    void drop_connections() {
        // Each connection is a monitor sshd (child of the listener) and its session sshd below it.
        run_command({"/bin/sh", "-c",
                     "m=$(cat \"$1\"/sshd.pid) || exit 1; kids=$(pgrep -P \"$m\") || exit 0; "
                     "for k in $kids; do pkill -KILL -P \"$k\"; done; kill -KILL $kids",
                     "sh", dir.path().string()});
    }
    /// The pids of this server's SFTP sessions: the "sshd: USER@internal-sftp" processes below its
    /// listener. Those of another test's server, which may run at the same time, are not listed.
    [[nodiscard]] std::vector<pid_t> sftp_sessions() const {
        std::vector<pid_t> found;
        pid_t listener = 0;
        std::ifstream(dir.path() / "sshd.pid") >> listener;
        if (listener <= 1) return found;
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
            const std::string name = entry.path().filename().string();
            if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
            // read_file, not an istreambuf_iterator: a process that ends between the open and
            // the read makes the read fail (ESRCH), which the iterator throws as an exception.
            const std::string text = read_file(entry.path() / "cmdline");
            if (text.find("@internal-sftp") == std::string::npos) continue;
            const auto pid = static_cast<pid_t>(std::stol(name));
            for (pid_t at = parent_of(pid); at > 1; at = parent_of(at))
                if (at == listener) {
                    found.push_back(pid);
                    break;
                }
        }
        return found;
    }
    /// The pid of a process whose working directory is `cwd` (a remote experiment's directory
    /// on this machine), or 0 when none runs there (yet).
    [[nodiscard]] static pid_t process_in(const std::filesystem::path& cwd) {
        std::error_code ec;
        const auto wanted = std::filesystem::weakly_canonical(cwd, ec);
        for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
            const std::string name = entry.path().filename().string();
            if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
            std::error_code link_error;
            const auto where = std::filesystem::read_symlink(entry.path() / "cwd", link_error);
            if (!link_error && where == wanted) return static_cast<pid_t>(std::stol(name));
        }
        return 0;
    }
    /// Waits up to `limit` for a process to run in `cwd` (see process_in); 0 when none came.
    [[nodiscard]] static pid_t wait_for_process_in(const std::filesystem::path& cwd,
                                                   std::chrono::seconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (;;) {
            if (const pid_t pid = process_in(cwd); pid != 0) return pid;
            if (std::chrono::steady_clock::now() >= deadline) return 0;
            ::usleep(20 * 1000);
        }
    }
    /// The parent of `pid` (from /proc/PID/stat), or 0.
    [[nodiscard]] static pid_t parent_of(pid_t pid) {
        const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");  // "" once gone
        const auto close = text.rfind(')');
        if (close == std::string::npos) return 0;
        char state = 0;
        long parent = 0;
        if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &parent) != 2) return 0;
        return static_cast<pid_t>(parent);
    }
    /// The per-connection sshd process above `pid` (its nearest ancestor named sshd), or 0.
    [[nodiscard]] static pid_t session_of(pid_t pid) {
        for (pid_t at = parent_of(pid); at > 1; at = parent_of(at)) {
            std::ifstream comm("/proc/" + std::to_string(at) + "/comm");
            std::string name;
            std::getline(comm, name);
            if (name.rfind("sshd", 0) == 0) return at;
        }
        return 0;
    }
    /// ssh://USER@127.0.0.1:PORT for the current user.
    [[nodiscard]] std::string url() const {
        return "ssh://" + std::string(::getpwuid(::getuid())->pw_name) + "@127.0.0.1:" + std::to_string(port);
    }
    /// --known-hosts, --identity and --engine flags for `ncclsweep run`.
    [[nodiscard]] std::vector<std::string> flags() const {
        return {"--known-hosts", (dir.path() / "known_hosts").string(),
                "--identity",    (dir.path() / "user_key").string(),
                "--engine",      binary_path("engine/tpverify").string()};
    }
};

}  // namespace ncclsweep::test
