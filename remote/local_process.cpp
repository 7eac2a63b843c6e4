#include "remote/local_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace ncclsweep::remote {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t k_read_chunk = 64 * 1024;

/// What the child reports through the status pipe when it cannot exec.
struct ChildFailure {
    int stage = 0;  ///< 1 = chdir, 2 = exec, 3 = stdin
    int error = 0;
};

[[noreturn]] void child_fail(int fd, int stage) {
    ChildFailure failure{stage, errno};
    [[maybe_unused]] auto written = ::write(fd, &failure, sizeof failure);
    _exit(127);
}

[[noreturn]] void run_child(const SpawnPlan& plan, char* const* argv, char* const* envp, int out_fd,
                            int err_fd, int status_fd) {
    ::setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd < 0) child_fail(status_fd, 3);
    ::dup2(null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    if (!plan.workdir.empty() && ::chdir(plan.workdir.c_str()) != 0) child_fail(status_fd, 1);
    ::execve(plan.program.c_str(), argv, envp);
    child_fail(status_fd, 2);
}

std::vector<char*> pointers(const std::vector<std::string>& words) {
    std::vector<char*> out;
    out.reserve(words.size() + 1);
    for (const auto& w : words) out.push_back(const_cast<char*>(w.c_str()));
    out.push_back(nullptr);
    return out;
}

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

}  // namespace

Result<std::unique_ptr<LocalProcess>> LocalProcess::spawn(const SpawnPlan& plan,
                                                          const ProcessOptions& options) {
    int out[2] = {-1, -1};
    int err[2] = {-1, -1};
    int status[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(status, O_CLOEXEC) != 0) {
        const int saved = errno;
        for (int* p : {out, err, status}) {
            close_fd(p[0]);
            close_fd(p[1]);
        }
        return Error::infrastructure(
            fmt::format("local: cannot create pipes for '{}': {}", plan.program, std::strerror(saved)));
    }
    auto argv = pointers(plan.argv);
    auto envp = pointers(plan.envp);
    const pid_t pid = ::fork();
    if (pid == 0) run_child(plan, argv.data(), envp.data(), out[1], err[1], status[1]);
    const int fork_errno = errno;
    close_fd(out[1]);
    close_fd(err[1]);
    close_fd(status[1]);
    if (pid < 0) {
        close_fd(out[0]);
        close_fd(err[0]);
        close_fd(status[0]);
        return Error::infrastructure(
            fmt::format("local: cannot fork for '{}': {}", plan.program, std::strerror(fork_errno)));
    }
    ChildFailure failure;
    ssize_t got;
    do {
        got = ::read(status[0], &failure, sizeof failure);
    } while (got < 0 && errno == EINTR);
    close_fd(status[0]);
    if (got == static_cast<ssize_t>(sizeof failure)) {
        int ignored = 0;
        ::waitpid(pid, &ignored, 0);
        close_fd(out[0]);
        close_fd(err[0]);
        const char* what = failure.stage == 1   ? "cannot enter working directory"
                           : failure.stage == 3 ? "cannot open /dev/null"
                                                : "cannot execute";
        const std::string where = failure.stage == 1 ? plan.workdir : plan.program;
        return Error::infrastructure(
            fmt::format("local: {} '{}': {}", what, where, std::strerror(failure.error)));
    }
    ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
    ::fcntl(err[0], F_SETFL, ::fcntl(err[0], F_GETFL) | O_NONBLOCK);
    return std::unique_ptr<LocalProcess>(new LocalProcess(pid, out[0], err[0], options));
}

LocalProcess::LocalProcess(pid_t pid, int out_fd, int err_fd, const ProcessOptions& options)
    : m_pid(pid),
      m_out_fd(out_fd),
      m_err_fd(err_fd),
      m_options(options),
      m_out_splitter(Stream::out, options.line_limit),
      m_err_splitter(Stream::err, options.line_limit) {}

LocalProcess::~LocalProcess() {
    if (!m_exit) kill(std::chrono::milliseconds(200));
    close_pipes();
}

void LocalProcess::close_pipes() {
    close_fd(m_out_fd);
    close_fd(m_err_fd);
}

bool LocalProcess::read_available(int& fd, LineSplitter& splitter) {
    char buffer[k_read_chunk];
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
        splitter.feed(buffer, static_cast<std::size_t>(got), m_lines);
        return true;
    }
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    splitter.finish(m_lines);  // EOF (or an error, which ends the stream the same way)
    close_fd(fd);
    return true;
}

bool LocalProcess::leader_exited() {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD;
    return info.si_pid == m_pid;
}

void LocalProcess::finish_group() {
    // The leader is a zombie until reaped below, so its pgid cannot be reused yet: killing the
    // group here can only hit our own leftovers.
    ::kill(-m_pid, SIGKILL);
    int status = 0;
    pid_t reaped;
    do {
        reaped = ::waitpid(m_pid, &status, 0);
    } while (reaped < 0 && errno == EINTR);
    ExitInfo info;
    if (reaped == m_pid && WIFSIGNALED(status)) {
        info.signal = WTERMSIG(status);
    } else if (reaped == m_pid && WIFEXITED(status)) {
        info.exit_code = WEXITSTATUS(status);
    }
    // Whatever the killed leftovers wrote before dying is still in the pipes: keep it (bounded).
    for (int round = 0; round < 16 && (m_out_fd >= 0 || m_err_fd >= 0); ++round) {
        bool any = false;
        if (m_out_fd >= 0) any |= read_available(m_out_fd, m_out_splitter);
        if (m_err_fd >= 0) any |= read_available(m_err_fd, m_err_splitter);
        if (!any) break;
    }
    if (m_out_fd >= 0) m_out_splitter.finish(m_lines);
    if (m_err_fd >= 0) m_err_splitter.finish(m_lines);
    close_pipes();
    m_exit = info;
}

PollState LocalProcess::poll(std::chrono::milliseconds wait, OutputLine& line) {
    std::optional<Clock::time_point> deadline;  // read the clock only once a wait is needed
    for (;;) {
        if (take_line(m_lines, line)) return PollState::line;
        if (m_exit) return PollState::exited;
        const auto now = Clock::now();
        if (!deadline) deadline = now + wait;
        const bool pipes_open = m_out_fd >= 0 || m_err_fd >= 0;
        if (leader_exited()) {
            if (!pipes_open) {
                finish_group();
                continue;
            }
            if (!m_leader_exit_seen) m_leader_exit_seen = now;
            if (now - *m_leader_exit_seen >= m_options.drain_grace) {
                finish_group();
                continue;
            }
        }
        if (now >= *deadline) return PollState::timeout;
        // Pipes open: wake on output, but look at the leader now and then. Pipes closed: the
        // leader is about to exit; check often.
        const auto slice = pipes_open ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5);
        const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now);
        const int timeout_ms =
            static_cast<int>(std::max<std::int64_t>(1, std::min(remaining, slice).count()));
        pollfd fds[2];
        nfds_t count = 0;
        if (m_out_fd >= 0) fds[count++] = {m_out_fd, POLLIN, 0};
        if (m_err_fd >= 0) fds[count++] = {m_err_fd, POLLIN, 0};
        if (count == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
            continue;
        }
        if (::poll(fds, count, timeout_ms) <= 0) continue;
        for (nfds_t i = 0; i < count; ++i) {
            if (fds[i].revents == 0) continue;
            if (fds[i].fd == m_out_fd)
                read_available(m_out_fd, m_out_splitter);
            else if (fds[i].fd == m_err_fd)
                read_available(m_err_fd, m_err_splitter);
        }
    }
}

void LocalProcess::kill(std::chrono::milliseconds grace) {
    if (m_exit) return;
    ::kill(-m_pid, SIGTERM);
    const auto deadline = Clock::now() + grace;
    while (!leader_exited() && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    finish_group();  // SIGKILL to the group (also when the leader already went), then reap
    m_lines.clear();
}

}  // namespace ncclsweep::remote
