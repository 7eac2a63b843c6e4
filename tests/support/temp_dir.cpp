#include "tests/support/temp_dir.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace ncclsweep::test {

TempDir::TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::filesystem::path root = base && *base ? base : "/tmp";
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
        auto candidate = root / ("ncclsweep-test-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
        std::error_code ec;
        if (std::filesystem::create_directory(candidate, ec)) {
            m_path = candidate;
            return;
        }
    }
    throw std::runtime_error("cannot create a temporary directory under " + root.string());
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

std::filesystem::path TempDir::write(const std::string& name, const std::string& text) const {
    auto full = m_path / name;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream out(full, std::ios::binary);
    out << text;
    return full;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          const std::vector<std::string>& env, std::chrono::seconds timeout) {
    int in_pipe[2], out_pipe[2], err_pipe[2];
    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe failed");
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    for (const auto& extra : env) {
        auto name = extra.substr(0, extra.find('=') + 1);
        std::erase_if(env_strings, [&](const std::string& s) { return s.rfind(name, 0) == 0; });
        env_strings.push_back(extra);
    }
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);

    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        setpgid(0, 0);
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        execvpe(cargv[0], cargv.data(), cenv.data());
        std::fprintf(stderr, "exec %s: %s\n", cargv[0], std::strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);  // also here: whichever of the two runs first
    close(in_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    CommandResult result;
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    std::optional<Clock::time_point>
        give_up;  // after the kill: descendants in other groups may hold the pipes
    size_t written = 0;
    int in_fd = in_pipe[1];
    if (input.empty()) {
        close(in_fd);
        in_fd = -1;
    } else {
        fcntl(in_fd, F_SETFL, O_NONBLOCK);
    }
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0 || in_fd >= 0) {
        pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
        const auto now = Clock::now();
        if (!result.timed_out && now >= deadline) {
            result.timed_out = true;
            kill(-pid, SIGKILL);
            give_up = now + std::chrono::seconds(2);
        }
        if (give_up && now >= *give_up) break;
        const auto until = give_up ? *give_up : deadline;
        const int wait_ms = static_cast<int>(std::max<long long>(
            1, std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count()));
        if (poll(fds, 3, wait_ms) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t n = read(fds[i].fd, buf, sizeof buf);
                if (n > 0) {
                    (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
                } else if (n == 0 || errno != EINTR) {
                    close(fds[i].fd);
                    (i == 0 ? out_pipe[0] : err_pipe[0]) = -1;
                    --open_fds;
                }
            }
        }
        if (in_fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(in_fd, input.data() + written, input.size() - written);
            if (n > 0) written += static_cast<size_t>(n);
            if (n < 0 || written == input.size()) {
                close(in_fd);
                in_fd = -1;
            }
        }
    }
    for (int fd : {out_pipe[0], err_pipe[0], in_fd})
        if (fd >= 0) close(fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (result.timed_out)
        result.err +=
            "\n[run_command: killed after " + std::to_string(timeout.count()) + " s: " + argv.front() + "]\n";
    return result;
}

std::filesystem::path binary_path(const std::string& relative) {
    return std::filesystem::path(NCCLSWEEP_BINARY_DIR) / relative;
}

std::filesystem::path source_path(const std::string& relative) {
    return std::filesystem::path(NCCLSWEEP_SOURCE_DIR) / relative;
}

}  // namespace ncclsweep::test
