// The rank launcher: fork + execve per rank, the unique id relayed over pipes, fail-fast wait.
#include "engine/launch/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace tpverify {
namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Rank {
    pid_t pid = -1;
    int id_in = -1;   ///< launcher's write end of the rank's id pipe (ranks > 0)
    int id_out = -1;  ///< launcher's read end of rank 0's id pipe
    bool running = false;
};

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

/// The ranks' output pipes, relayed to the launcher's outputs one whole line at a time.
class Relay {
public:
    ~Relay() {
        for (Stream& s : m_streams) close_fd(s.fd);
    }
    void add(int fd, int rank, int dest, bool prefix) { m_streams.push_back({fd, dest, prefix, rank, {}}); }
    /// Waits up to `timeout_ms` for output and forwards every complete line. False once every
    /// pipe has reached its end.
    bool pump(int timeout_ms) {
        std::vector<pollfd> fds;
        std::vector<Stream*> which;
        for (Stream& s : m_streams)
            if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0}), which.push_back(&s);
        if (fds.empty()) {
            if (timeout_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
            return false;
        }
        int ready = ::poll(fds.data(), fds.size(), timeout_ms);
        if (ready <= 0) return true;
        char buf[65536];
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            Stream& s = *which[i];
            const ssize_t n = ::read(s.fd, buf, sizeof buf);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) {  // end of file: the rank (and whatever held its pipe) is gone
                finish(s);
                close_fd(s.fd);
                continue;
            }
            s.pending.append(buf, std::size_t(n));
            forward_lines(s);
        }
        return true;
    }
    /// Relays what is left until every pipe ends, for at most `seconds`; then the partial lines.
    void drain(double seconds) {
        const double until = now_s() + seconds;
        while (now_s() < until && pump(20)) {
        }
        for (Stream& s : m_streams) finish(s);
    }

private:
    struct Stream {
        int fd, dest;
        bool prefix;
        int rank;
        std::string pending;
    };
    static constexpr std::size_t k_longest_line = 1 << 20;  // longer runs are cut into lines
    void emit(const Stream& s, const char* data, std::size_t len) {
        std::string line;
        if (s.prefix) line = "[rank " + std::to_string(s.rank) + "] ";
        line.append(data, len);
        line += '\n';
        // One write per line: a line never mixes with another (a pipe keeps writes of at most
        // PIPE_BUF whole; the launcher writes one line at a time in any case).
        (void)write_all(s.dest, line.data(), line.size());
    }
    void forward_lines(Stream& s) {
        std::size_t start = 0;
        for (std::size_t nl; (nl = s.pending.find('\n', start)) != std::string::npos; start = nl + 1)
            emit(s, s.pending.data() + start, nl - start);
        s.pending.erase(0, start);
        if (s.pending.size() > k_longest_line) {
            emit(s, s.pending.data(), s.pending.size());
            s.pending.clear();
        }
    }
    void finish(Stream& s) {
        if (!s.pending.empty()) emit(s, s.pending.data(), s.pending.size());
        s.pending.clear();
    }
    std::vector<Stream> m_streams;
};

std::string status_text(int status) {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const char* name = strsignal(WTERMSIG(status));
        return "signal " + std::to_string(WTERMSIG(status)) + " (" + (name ? name : "?") + ")";
    }
    return "status " + std::to_string(status);
}

void kill_all(std::vector<Rank>& ranks) {
    for (Rank& r : ranks)
        if (r.running) ::kill(r.pid, SIGKILL);
    for (Rank& r : ranks) {
        if (!r.running) continue;
        int status = 0;
        while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
        }
        r.running = false;
    }
}

/// Reaps ranks that have exited; on the first failure fills `out` and returns true.
bool reap(std::vector<Rank>& ranks, LaunchOutcome& out) {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        Rank& r = ranks[i];
        if (!r.running) continue;
        int status = 0;
        pid_t got = ::waitpid(r.pid, &status, WNOHANG);
        if (got != r.pid) continue;
        r.running = false;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        out.failed_rank = static_cast<int>(i);
        out.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        out.message = "rank " + std::to_string(i) + " of " + std::to_string(ranks.size()) + " ended with " +
                      status_text(status) +
                      " (its own error, if it printed one, is above); the other ranks were stopped";
        return true;
    }
    return false;
}

}  // namespace

bool parse_bootstrap_fds(const char* value, BootstrapFds& out) {
    if (value == nullptr || *value == '\0') return false;
    char* end = nullptr;
    errno = 0;
    long a = std::strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != ',') return false;
    const char* second = end + 1;
    long b = std::strtol(second, &end, 10);
    if (errno != 0 || end == second || *end != '\0') return false;
    if (a < -1 || b < -1 || a > 1 << 20 || b > 1 << 20 || (a < 0 && b < 0)) return false;
    out.read_fd = static_cast<int>(a);
    out.write_fd = static_cast<int>(b);
    return true;
}

std::string read_exact(int fd, void* data, std::size_t size, double timeout_s) {
    auto* p = static_cast<unsigned char*>(data);
    std::size_t got = 0;
    const double deadline = now_s() + timeout_s;
    while (got < size) {
        double left = deadline - now_s();
        if (left <= 0) return "timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s";
        pollfd pfd{fd, POLLIN, 0};
        int ready = ::poll(&pfd, 1, static_cast<int>(left * 1000) + 1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return std::string("poll failed: ") + std::strerror(errno);
        if (ready == 0) continue;
        ssize_t n = ::read(fd, p + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::string("read failed: ") + std::strerror(errno);
        if (n == 0)
            return "the other end closed the pipe after " + std::to_string(got) + " of " +
                   std::to_string(size) + " bytes";
        got += static_cast<std::size_t>(n);
    }
    return {};
}

std::string write_all(int fd, const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t put = 0;
    while (put < size) {
        ssize_t n = ::write(fd, p + put, size - put);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::string("write failed: ") + std::strerror(errno);
        put += static_cast<std::size_t>(n);
    }
    return {};
}

std::string self_exe(const char* argv0) {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return argv0 ? argv0 : "";
    buf[n] = '\0';
    return buf;
}

LaunchOutcome launch_ranks(const LaunchSpec& spec) {
    LaunchOutcome out;
    std::vector<Rank> ranks(static_cast<std::size_t>(spec.nranks));
    Relay relay;
    // A rank that died makes writes to its pipe fail with EPIPE, not kill the launcher.
    ::signal(SIGPIPE, SIG_IGN);
    const pid_t launcher = ::getpid();
    const bool caller_debug_file = std::getenv("NCCL_DEBUG_FILE") != nullptr;
    for (int r = 0; r < spec.nranks; ++r) {
        int fds[2] = {-1, -1};
        // Output pipes: stdout, stderr, NCCL's debug file (read ends stay in the launcher).
        int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, nccl_pipe[2] = {-1, -1};
        if (::pipe2(fds, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
            ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(nccl_pipe, O_CLOEXEC) != 0) {
            out = {1, -1, std::string("pipe2 failed: ") + std::strerror(errno)};
            for (int fd : {fds[0], fds[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], nccl_pipe[0],
                           nccl_pipe[1]})
                if (fd >= 0) ::close(fd);
            kill_all(ranks);
            return out;
        }
        // Rank 0 writes the id (child end = write end); the others read it (child end = read end).
        const int child_end = r == 0 ? fds[1] : fds[0];
        const int parent_end = r == 0 ? fds[0] : fds[1];
        std::string env_fds = r == 0 ? "-1," + std::to_string(child_end) : std::to_string(child_end) + ",-1";
        // Everything execve needs is built before fork (only async-signal-safe calls after it).
        std::vector<std::string> args = {spec.exe};
        args.insert(args.end(), spec.args.begin(), spec.args.end());
        args.insert(args.end(), {"--rank", std::to_string(r), "--nranks", std::to_string(spec.nranks)});
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        std::string env_entry = std::string(k_bootstrap_env) + "=" + env_fds;
        std::string relayed = std::string(k_relayed_env) + "=1";
        std::string debug_file = "NCCL_DEBUG_FILE=/dev/fd/" + std::to_string(nccl_pipe[1]);
        std::vector<char*> envp;
        const std::size_t prefix = std::strlen(k_bootstrap_env) + 1;
        for (char** e = environ; *e != nullptr; ++e)
            if (std::strncmp(*e, env_entry.c_str(), prefix) != 0) envp.push_back(*e);
        envp.push_back(env_entry.data());
        envp.push_back(relayed.data());
        if (!caller_debug_file) envp.push_back(debug_file.data());
        envp.push_back(nullptr);
        pid_t pid = ::fork();
        if (pid < 0) {
            out = {1, -1, std::string("fork failed: ") + std::strerror(errno)};
            ::close(fds[0]);
            ::close(fds[1]);
            kill_all(ranks);
            return out;
        }
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != launcher) ::_exit(127);  // the launcher died before prctl
            ::fcntl(child_end, F_SETFD, 0);             // keep this rank's own end across exec
            ::fcntl(nccl_pipe[1], F_SETFD, 0);          // NCCL_DEBUG_FILE=/dev/fd/N
            ::dup2(out_pipe[1], 1);
            ::dup2(err_pipe[1], 2);
            ::execve(argv[0], argv.data(), envp.data());
            const char msg[] = "tpverify: launch: execve of a rank process failed\n";
            (void)!::write(2, msg, sizeof msg - 1);
            ::_exit(127);
        }
        ::close(child_end);
        ::close(out_pipe[1]);
        ::close(err_pipe[1]);
        ::close(nccl_pipe[1]);
        relay.add(out_pipe[0], r, spec.out_fd, r != 0);  // rank 0's stdout: the event stream, as is
        relay.add(err_pipe[0], r, spec.err_fd, true);
        relay.add(nccl_pipe[0], r, spec.out_fd, true);  // where NCCL itself writes: stdout
        Rank& rank = ranks[static_cast<std::size_t>(r)];
        rank.pid = pid;
        rank.running = true;
        (r == 0 ? rank.id_out : rank.id_in) = parent_end;
    }

    // Relay rank 0's unique id, watching for ranks that die meanwhile.
    unsigned char id[k_unique_id_bytes];
    std::string err;
    const double deadline = now_s() + spec.bootstrap_timeout_s;
    for (;;) {
        if (reap(ranks, out)) break;
        relay.pump(0);
        err = read_exact(ranks[0].id_out, id, sizeof id, 0.05);
        if (err.empty()) break;
        if (err.rfind("timed out", 0) != 0 || now_s() > deadline) {
            // Closed early: rank 0 died (reap says how) or never wrote the id.
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            if (reap(ranks, out)) break;
            out = {1, 0, "rank 0 did not hand over NCCL's unique id (" + err + ")"};
            break;
        }
    }
    close_fd(ranks[0].id_out);
    if (out.exit_status == 0 && out.failed_rank < 0) {
        for (std::size_t r = 1; r < ranks.size(); ++r) {
            if (std::string e = write_all(ranks[r].id_in, id, sizeof id); !e.empty() && ranks[r].running) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                if (!reap(ranks, out))
                    out = {1, static_cast<int>(r),
                           "handing the unique id to rank " + std::to_string(r) + ": " + e};
                break;
            }
        }
    }
    for (Rank& r : ranks) close_fd(r.id_in);
    // What the ranks wrote comes out whatever happened (a killed rank's pipe still holds it).
    constexpr double k_drain_s = 2.0;
    if (out.exit_status != 0 || out.failed_rank >= 0) {
        kill_all(ranks);
        relay.drain(k_drain_s);
        return out;
    }
    // Wait, relaying output: the first failure ends all ranks at once.
    for (;;) {
        if (reap(ranks, out)) {
            kill_all(ranks);
            relay.drain(k_drain_s);
            return out;
        }
        bool any = false;
        for (const Rank& r : ranks) any = any || r.running;
        if (!any) {
            relay.drain(k_drain_s);
            return out;
        }
        relay.pump(10);
    }
}

}  // namespace tpverify
