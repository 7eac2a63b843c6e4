// The ssh agent's sh program (remote/agent_script) driven directly through pipes, under dash and
// bash (a host's /bin/sh is one or the other), and its protocol's parsers.
#include "remote/agent_script.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace std::chrono_literals;
using remote::AgentMessage;

namespace {

/// The agent running under `shell -s` on this machine, as sshd would run it for a login.
class LocalAgent {
public:
    explicit LocalAgent(const char* shell) {
        int in[2], out[2];
        REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
        REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
        m_pid = ::fork();
        REQUIRE(m_pid >= 0);
        if (m_pid == 0) {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            ::execl(shell, shell, "-s", static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        m_in = in[1];
        m_out = out[0];
        send_raw(remote::agent_script("0123456789abcdef"));
        const auto banner = remote::parse_agent_banner(line(), "0123456789abcdef");
        REQUIRE(banner);
        REQUIRE(banner->ready);
        default_signals = banner->default_signals;
        spool = banner->spool;
    }
    ~LocalAgent() {
        end_input();
        if (m_pid > 0) {
            ::kill(m_pid, SIGKILL);
            ::waitpid(m_pid, nullptr, 0);
        }
        if (m_out >= 0) ::close(m_out);
    }
    LocalAgent(const LocalAgent&) = delete;
    LocalAgent& operator=(const LocalAgent&) = delete;

    void send(const std::string& request) { send_raw(request + "\n"); }
    /// The next line the agent writes ("" when none comes within 20 s).
    std::string line() {
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        for (;;) {
            if (const auto end = m_buffer.find('\n'); end != std::string::npos) {
                std::string text = m_buffer.substr(0, end);
                m_buffer.erase(0, end + 1);
                return text;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return {};
            pollfd fd{m_out, POLLIN, 0};
            if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
            char chunk[4096];
            const ssize_t n = ::read(m_out, chunk, sizeof chunk);
            if (n <= 0) return {};
            m_buffer.append(chunk, static_cast<std::size_t>(n));
        }
    }
    /// The next message about command `id` of kind `kind`; other lines are kept for later.
    AgentMessage next(AgentMessage::Kind kind, long id) {
        for (auto it = m_pending.begin(); it != m_pending.end(); ++it) {
            const auto m = remote::parse_agent_message(*it);
            if (m.kind == kind && m.id == id) {
                m_pending.erase(it);
                return m;
            }
        }
        for (std::string text; !(text = line()).empty();) {
            const auto m = remote::parse_agent_message(text);
            if (m.kind == kind && m.id == id) return m;
            m_pending.push_back(text);
        }
        FAIL("no such message from the agent");
        return {};
    }
    /// Writes the script of command `id` and runs it; returns its process group.
    long run(long id, const std::string& script) {
        std::ofstream(spool + "/" + std::to_string(id) + ".sh") << script;
        send("run " + std::to_string(id));
        const auto started = next(AgentMessage::Kind::started, id);
        CHECK(started.pgid > 1);
        return started.pgid;
    }
    std::string file(long id, const char* suffix) const {
        return test::read_file(spool + "/" + std::to_string(id) + "." + suffix);
    }
    void end_input() {
        if (m_in >= 0) ::close(m_in);
        m_in = -1;
    }
    /// Waits for the agent to exit; its wait status.
    int wait_exit() {
        int status = 0;
        REQUIRE(::waitpid(m_pid, &status, 0) == m_pid);
        m_pid = -1;
        return status;
    }
    [[nodiscard]] pid_t pid() const { return m_pid; }

    std::string spool;
    bool default_signals = false;

private:
    void send_raw(const std::string& text) {
        REQUIRE(::write(m_in, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    }
    pid_t m_pid = -1;
    int m_in = -1;
    int m_out = -1;
    std::string m_buffer;
    std::vector<std::string> m_pending;
};

bool group_exists(long pgid) {
    return ::kill(static_cast<pid_t>(-pgid), 0) == 0;
}

/// Waits up to 20 s for `condition` (polled); its last value.
template <typename Condition>
bool eventually(Condition condition) {
    for (int i = 0; i < 400; ++i) {
        if (condition()) return true;
        std::this_thread::sleep_for(50ms);
    }
    return condition();
}

std::vector<const char*> shells() {
    std::vector<const char*> found;
    for (const char* shell : {"/bin/dash", "/bin/bash"})
        if (std::filesystem::exists(shell)) found.push_back(shell);
    return found;
}

}  // namespace

TEST_CASE("agent: commands run in their own group with their output in the spool", "[remote][agent]") {
    for (const char* shell : shells()) {
        INFO(shell);
        LocalAgent agent(shell);
        CHECK(std::filesystem::is_directory(agent.spool));
        // Debian 12's coreutils (9.1) has env --default-signal.
        CHECK(agent.default_signals);
        // The group is the command's own: its shell is the leader of a new session.
        const long pgid =
            agent.run(1, "echo \"$$ $(ps -o pgid= -p $$) $(ps -o sid= -p $$)\"; echo err >&2; exit 5");
        const auto exited = agent.next(AgentMessage::Kind::exited, 1);
        CHECK(exited.status == 5);
        CHECK_FALSE(exited.group_alive);
        const std::string id = std::to_string(pgid);
        std::string ids = agent.file(1, "out");
        for (auto at = ids.find("  "); at != std::string::npos; at = ids.find("  ")) ids.erase(at, 1);
        CHECK(ids == id + " " + id + " " + id + "\n");
        CHECK(agent.file(1, "err") == "err\n");
        // The script runs in the group's leader itself (no process start more than needed).
        agent.run(4, "echo $$");
        agent.next(AgentMessage::Kind::exited, 4);
        CHECK(std::stol(agent.file(4, "out")) > 1);
        // Killed by a signal: sh's 128 + N.
        agent.run(2, "kill -SEGV $$");
        CHECK(agent.next(AgentMessage::Kind::exited, 2).status == 128 + SIGSEGV);
        // A member left behind by the leader is reported, so the client can end the group.
        const long left = agent.run(3, "sleep 30 & exit 0");
        const auto leader_done = agent.next(AgentMessage::Kind::exited, 3);
        CHECK(leader_done.group_alive);
        CHECK(group_exists(left));
        agent.send("signal 3 KILL");
        CHECK(eventually([&] { return !group_exists(left); }));
        agent.send("forget 3");
        agent.send("ping 1");
        CHECK(agent.next(AgentMessage::Kind::pong, 1).id == 1);
        CHECK_FALSE(std::filesystem::exists(agent.spool + "/3.out"));
    }
}

TEST_CASE("agent: kill escalates from TERM to KILL and answers when the group is gone", "[remote][agent]") {
    for (const char* shell : shells()) {
        INFO(shell);
        LocalAgent agent(shell);
        const long polite = agent.run(1, "exec sleep 30");
        agent.send("kill 1 50");
        CHECK(agent.next(AgentMessage::Kind::exited, 1).status == 128 + SIGTERM);
        agent.next(AgentMessage::Kind::killed, 1);
        CHECK(eventually([&] { return !group_exists(polite); }));  // its zombies reaped
        // TERM ignored by the whole group: KILL after 3 tenths. The kill is sent only once the
        // trap is set (the file appears after it), else a TERM could end it before the trap.
        const std::string trapped = agent.spool + "/2.trapped";
        const long stubborn = agent.run(2, "trap '' TERM; sleep 30 & : > '" + trapped + "'; sleep 30");
        REQUIRE(eventually([&] { return std::filesystem::exists(trapped); }));
        agent.send("kill 2 3");
        agent.next(AgentMessage::Kind::killed, 2);
        CHECK(agent.next(AgentMessage::Kind::exited, 2).status == 128 + SIGKILL);
        CHECK(eventually([&] { return !group_exists(stubborn); }));
        // A kill of a command that already ended answers at once.
        agent.run(3, "true");
        agent.next(AgentMessage::Kind::exited, 3);
        agent.send("kill 3 50");
        agent.next(AgentMessage::Kind::killed, 3);
    }
}

TEST_CASE("agent: requests that are not the protocol's are ignored", "[remote][agent]") {
    LocalAgent agent(shells().front());
    const std::string escape = agent.spool + "/../ncclsweep-agent-test-escape.sh";
    std::ofstream(escape) << "touch " << agent.spool << "/ran\n";
    for (const char* bad : {"run ../ncclsweep-agent-test-escape", "run 1;touch", "run", "bogus 1",
                            "signal 1 STOP", "kill 1 $(touch x)", "run -1", "ping 1 2 3"})
        agent.send(bad);
    agent.send("ping 9");
    CHECK(agent.next(AgentMessage::Kind::pong, 9).id == 9);
    CHECK_FALSE(std::filesystem::exists(agent.spool + "/ran"));
    std::filesystem::remove(escape);
}

TEST_CASE("agent: the end of its input ends its commands and its spool", "[remote][agent]") {
    for (const char* shell : shells()) {
        INFO(shell);
        LocalAgent agent(shell);
        const long pgid = agent.run(1, "sleep 30 & sleep 30");
        agent.end_input();  // the client went, or the connection broke
        CHECK(WIFEXITED(agent.wait_exit()));
        CHECK(eventually([&] { return !group_exists(pgid); }));
        CHECK_FALSE(std::filesystem::exists(agent.spool));
    }
}

TEST_CASE("agent: when the agent itself is killed its watchdog ends its commands", "[remote][agent]") {
    for (const char* shell : shells()) {
        INFO(shell);
        LocalAgent agent(shell);
        const long pgid = agent.run(1, "sleep 30 & sleep 30");
        REQUIRE(::kill(agent.pid(), SIGKILL) == 0);  // as a dying sshd's children are
        agent.wait_exit();
        CHECK(eventually([&] { return !group_exists(pgid); }));
        CHECK(eventually([&] { return !std::filesystem::exists(agent.spool); }));
    }
}

TEST_CASE("agent protocol: banner, messages and exit statuses", "[remote][agent]") {
    const auto banner = remote::parse_agent_banner(
        "pyenv: noisy rc textncclsweep-agent-abc ready default-signal /tmp/a b", "abc");
    REQUIRE(banner);
    CHECK(banner->ready);
    CHECK(banner->default_signals);
    CHECK(banner->spool == "/tmp/a b");
    CHECK(remote::script_env_options(*banner) == "--default-signal=INT,QUIT");
    const auto old_env = remote::parse_agent_banner("ncclsweep-agent-abc ready - /tmp/x", "abc");
    REQUIRE(old_env);
    CHECK_FALSE(old_env->default_signals);
    CHECK(remote::script_env_options(*old_env).empty());
    CHECK_FALSE(remote::parse_agent_banner("ncclsweep-agent-abc ready /tmp/x", "abc"));
    const auto missing = remote::parse_agent_banner("ncclsweep-agent-abc missing setsid", "abc");
    REQUIRE(missing);
    CHECK_FALSE(missing->ready);
    CHECK(missing->missing == "setsid");
    CHECK_FALSE(remote::parse_agent_banner("ncclsweep-agent-abd ready /tmp/a", "abc"));
    CHECK_FALSE(remote::parse_agent_banner("ncclsweep-agent-abc hello", "abc"));

    const auto started = remote::parse_agent_message("started 4 1234");
    CHECK(started.kind == AgentMessage::Kind::started);
    CHECK(started.id == 4);
    CHECK(started.pgid == 1234);
    const auto exited = remote::parse_agent_message("exit 4 137 1");
    CHECK(exited.kind == AgentMessage::Kind::exited);
    CHECK(exited.status == 137);
    CHECK(exited.group_alive);
    CHECK(remote::parse_agent_message("killed 4").kind == AgentMessage::Kind::killed);
    CHECK(remote::parse_agent_message("pong 2").kind == AgentMessage::Kind::pong);
    for (const char* other : {"", "started", "started x 1", "started 4", "exit 4 1", "exit 4 1 2",
                              "exit 4 -1 0", "started 4 12a", "pong", "hello 1", "killed 4 5"})
        CHECK(remote::parse_agent_message(other).kind == AgentMessage::Kind::other);

    CHECK(remote::exit_info_of_status(0).success());
    CHECK(remote::exit_info_of_status(5).exit_code == 5);
    CHECK(remote::exit_info_of_status(126).exit_code == 126);
    CHECK(remote::exit_info_of_status(128).exit_code == 128);
    CHECK(remote::exit_info_of_status(128 + SIGKILL).signal == SIGKILL);
    CHECK(remote::exit_info_of_status(128 + SIGKILL).exit_code == 0);
    CHECK(remote::exit_info_of_status(255).exit_code == 255);
}

TEST_CASE("agent: the line the login shell gets is fixed and plain", "[remote][agent]") {
    const std::string line = remote::k_agent_command;
    CHECK(line == "exec /bin/sh -s");
    for (char c : line)
        CHECK(
            (std::isalnum(static_cast<unsigned char>(c)) || std::string(" /-").find(c) != std::string::npos));
}
