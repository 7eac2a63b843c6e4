// SshTarget against a real OpenSSH sshd on 127.0.0.1 (scripts/test-sshd.sh). Each test case
// starts its own server in a fresh TempDir; without sshd installed the cases are skipped.
#include "remote/ssh_target.hpp"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <thread>

#include "core/host.hpp"
#include "core/text.hpp"
#include "remote/slurm_target.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_sshd.hpp"
#include "tests/support/test_user.hpp"

using namespace ncclsweep;
using namespace std::chrono_literals;
using remote::SshOptions;
using remote::SshTarget;
using remote::TargetUrl;

namespace {

/// The shared TestSshd plus what SshTarget needs to reach it.
struct TestSshd : test::TestSshd {
    using test::TestSshd::TestSshd;
    [[nodiscard]] SshOptions options() const {
        SshOptions o;
        o.known_hosts = (dir.path() / "known_hosts").string();
        o.identity_file = (dir.path() / "user_key").string();
        o.connect_timeout = 10s;
        o.workdir_root = (dir.path() / "remote-work").string();
        return o;
    }
    [[nodiscard]] TargetUrl target_url() const {
        TargetUrl u;
        u.kind = TargetUrl::Kind::ssh;
        u.user = ::getpwuid(::getuid())->pw_name;
        u.host = "127.0.0.1";
        u.port = port;
        return u;
    }
    std::unique_ptr<SshTarget> connect() const {
        auto target = SshTarget::connect(target_url(), options());
        INFO((target.ok() ? std::string() : target.error().message));
        REQUIRE(target.ok());
        return std::move(*target);
    }
};

std::vector<OutputLine> collect(Process& p, PollState& last, std::chrono::milliseconds limit = 15s) {
    std::vector<OutputLine> lines;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    OutputLine line;
    last = PollState::timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        last = p.poll(200ms, line);
        if (last == PollState::line) lines.push_back(line);
        if (last == PollState::exited || last == PollState::lost) break;
    }
    return lines;
}

std::string unique_sleep() {
    std::random_device rd;
    return "1000." + std::to_string(rd() % 1000000 + 1000000);
}

/// The exec channels sshd opened so far (one per login-shell start).
int exec_channels(const TestSshd& sshd) {
    const std::string log = test::read_file(sshd.dir.path() / "sshd.log");
    int count = 0;
    for (auto at = log.find("Starting session: command"); at != std::string::npos;
         at = log.find("Starting session: command", at + 1))
        ++count;
    return count;
}

/// Runs `argv` on `target` to its end; its output lines joined by '\n'.
std::string run_to_end(Target& target, std::vector<std::string> argv) {
    Command command;
    command.argv = std::move(argv);
    auto p = target.start(command);
    REQUIRE(p.ok());
    PollState last;
    std::string text;
    for (const auto& l : collect(**p, last)) text += (text.empty() ? "" : "\n") + l.text;
    REQUIRE(last == PollState::exited);
    return text;
}

bool processes_with(const std::string& marker) {
    return test::run_command({"pgrep", "-f", "sleep " + marker}).exit_code == 0;
}

}  // namespace

TEST_CASE("ssh: hostile argv and env values arrive exactly", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    REQUIRE(target->prepare_workdir("sweep-a").ok());
    const std::string hostile =
        "it's \"$(touch pwned)\" `touch pwned2` ; | & \\ $HOME\nsecond line\t\xc3\xa9\xe6\x97\xa5 '";
    Command command;
    command.argv = {"sh", "-c", "printf '%s|%s|%s|%s' \"$HOSTILE\" \"$1\" \"$(pwd)\" \"$PYTHONPATH\"",
                    "argv0", hostile};
    command.env = {{"HOSTILE", hostile}};
    command.pythonpath_prepend = "/opt/site dir";
    auto process = target->start(command);
    REQUIRE(process.ok());
    PollState last;
    auto lines = collect(**process, last);
    REQUIRE(last == PollState::exited);
    std::string text;
    for (const auto& l : lines) text += (text.empty() ? "" : "\n") + l.text;
    const std::string workdir = (sshd.dir.path() / "remote-work" / "sweep-a").string();
    CHECK(text == hostile + "|" + hostile + "|" + workdir + "|/opt/site dir");
    CHECK((*process)->exit_info()->success());
    CHECK_FALSE(std::filesystem::exists(workdir + "/pwned"));
    CHECK_FALSE(std::filesystem::exists(workdir + "/pwned2"));
}

TEST_CASE("ssh: streams, exit status and signals", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    Command command;
    command.argv = {"sh", "-c", "echo out; echo err >&2; exit 5"};
    auto p = target->start(command);
    REQUIRE(p.ok());
    PollState last;
    auto lines = collect(**p, last);
    REQUIRE(last == PollState::exited);
    REQUIRE(lines.size() == 2);
    CHECK((lines[0].stream == Stream::out ? lines[0] : lines[1]).text == "out");
    CHECK((lines[0].stream == Stream::err ? lines[0] : lines[1]).text == "err");
    CHECK((*p)->exit_info()->exit_code == 5);
    command.argv = {"sh", "-c", "kill -SEGV $$"};
    auto q = target->start(command);
    REQUIRE(q.ok());
    collect(**q, last);
    REQUIRE(last == PollState::exited);
    CHECK((*q)->exit_info()->signal == SIGSEGV);
    auto out = target->capture({"echo", "captured"}, 10s);  // the same connection serves many channels
    REQUIRE(out.ok());
    CHECK(*out == "captured\n");
    // No signal ignored, SIGINT and SIGQUIT included (sh ignores them for background commands).
    CHECK(run_to_end(*target, {"grep", "SigIgn", "/proc/self/status"}) == "SigIgn:\t0000000000000000");
}

TEST_CASE("ssh: unknown host refused, accepted with accept-new and then remembered", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto options = sshd.options();
    options.known_hosts = (sshd.dir.path() / "empty" / "known_hosts").string();
    auto refused = SshTarget::connect(sshd.target_url(), options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("unknown host key") != std::string::npos);
    CHECK(refused.error().message.find("SHA256:") != std::string::npos);
    CHECK(refused.error().message.find("--accept-new-host-key") != std::string::npos);
    options.accept_new_host_key = true;
    auto accepted = SshTarget::connect(sshd.target_url(), options);
    REQUIRE(accepted.ok());
    CHECK(test::read_file(options.known_hosts).find("[127.0.0.1]:" + std::to_string(sshd.port)) !=
          std::string::npos);
    options.accept_new_host_key = false;
    CHECK(SshTarget::connect(sshd.target_url(), options).ok());
}

TEST_CASE("ssh: a changed host key is refused with its fingerprint, nothing runs", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    const auto other = sshd.dir.path() / "other_key";
    REQUIRE(
        test::run_command({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other.string()}).exit_code ==
        0);
    const std::string pub = test::read_file(other.string() + ".pub");
    const auto known = sshd.dir.write("changed_known_hosts", "[127.0.0.1]:" + std::to_string(sshd.port) +
                                                                 " " + pub.substr(0, pub.rfind(' ')) + "\n");
    for (bool accept_new : {false, true}) {
        auto options = sshd.options();
        options.known_hosts = known.string();
        options.accept_new_host_key = accept_new;  // never overrides a changed key
        auto refused = SshTarget::connect(sshd.target_url(), options);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().kind == ErrorKind::infrastructure);
        CHECK(refused.error().message.find("HOST KEY CHANGED") != std::string::npos);
        CHECK(refused.error().message.find("SHA256:") != std::string::npos);
        CHECK(refused.error().message.find(known.string()) != std::string::npos);
        // The command it suggests pastes as it reads: each path one quoted word.
        CHECK(refused.error().message.find("ssh-keygen -R " +
                                           shell_quote("[127.0.0.1]:" + std::to_string(sshd.port)) + " -f " +
                                           shell_quote(known.string()) + ")") != std::string::npos);
    }
}

TEST_CASE("ssh: a wrong key gives a clear authentication error", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    const auto wrong = sshd.dir.path() / "wrong_key";
    REQUIRE(
        test::run_command({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", wrong.string()}).exit_code ==
        0);
    auto options = sshd.options();
    options.identity_file = wrong.string();
    auto failed = SshTarget::connect(sshd.target_url(), options);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().message.find("authentication") != std::string::npos);
    CHECK(failed.error().message.find(wrong.string()) != std::string::npos);
    options.identity_file = (sshd.dir.path() / "missing_key").string();
    auto missing = SshTarget::connect(sshd.target_url(), options);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find("cannot read identity file") != std::string::npos);
}

TEST_CASE("ssh: put_file through SFTP creates parents and replaces atomically", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    auto work = target->prepare_workdir("sweep-p");
    REQUIRE(work.ok());
    CHECK(std::filesystem::is_directory(*work));
    const std::string path = *work + "/exp-1/site/sitecustomize.py";
    std::string big;
    for (int i = 0; i < 20000; ++i) big += "line " + std::to_string(i) + " \xe2\x82\xac '$(x)'\n";
    REQUIRE(target->put_file(path, "first\n").ok());
    auto replaced = target->put_file(path, big);
    INFO((replaced.ok() ? std::string() : replaced.error().message));
    REQUIRE(replaced.ok());
    CHECK(test::read_file(path) == big);
    CHECK(std::distance(std::filesystem::directory_iterator(*work + "/exp-1/site"), {}) == 1);
    // Replacing stays within SFTP: no command was run for it. sshd logs each exec channel at
    // LogLevel VERBOSE as "Starting session: command": the agent's, and no other.
    const std::string log = test::read_file(sshd.dir.path() / "sshd.log");
    CHECK(log.find("subsystem 'sftp'") != std::string::npos);
    CHECK(exec_channels(sshd) == 1);
    auto cat = target->capture({"cat", path}, 10s);
    REQUIRE(cat.ok());
    CHECK(*cat == big);
}

TEST_CASE("ssh: kill ends the remote process group", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    const std::string marker = unique_sleep();
    Command command;
    command.argv = {"sh", "-c", "trap '' TERM; sleep " + marker + " & sleep " + marker + " & echo up; wait"};
    auto p = target->start(command);
    REQUIRE(p.ok());
    OutputLine line;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline && (*p)->poll(200ms, line) != PollState::line) {
    }
    REQUIRE(line.text == "up");
    REQUIRE(processes_with(marker));
    (*p)->kill(500ms);
    REQUIRE((*p)->exit_info());
    CHECK((*p)->exit_info()->signal != 0);
    bool gone = false;  // polled: the kill reaches the sleeps asynchronously (at most 20 s)
    for (int i = 0; i < 400 && !gone; ++i) {
        gone = !processes_with(marker);
        if (!gone) std::this_thread::sleep_for(50ms);
    }
    CHECK(gone);
    if (!gone) test::run_command({"pkill", "-KILL", "-f", "sleep " + marker});
}

TEST_CASE("ssh: a dying sshd is reported as lost, and reconnect works", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    const std::string marker = unique_sleep();
    Command command;
    command.argv = {"sh", "-c", "echo started; sleep " + marker};
    auto p = target->start(command);
    REQUIRE(p.ok());
    OutputLine line;
    REQUIRE((*p)->poll(10s, line) == PollState::line);
    REQUIRE(line.text == "started");
    sshd.stop();
    PollState last;
    collect(**p, last, 20s);
    CHECK(last == PollState::lost);
    CHECK_FALSE((*p)->exit_info().has_value());
    CHECK((*p)->lost_reason().find("connection lost") != std::string::npos);
    CHECK_FALSE(target->start(command).ok());  // a dead connection is not silently reused
    test::run_command({"pkill", "-KILL", "-f", "sleep " + marker});
    REQUIRE(sshd.start(std::to_string(sshd.port)));
    REQUIRE(target->reconnect().ok());
    auto out = target->capture({"echo", "again"}, 10s);
    REQUIRE(out.ok());
    CHECK(*out == "again\n");
}

TEST_CASE(
    "ssh: an SFTP subsystem killed under a live connection is reopened and existing directories are reused",
    "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    auto work = target->prepare_workdir("sweep-s");
    REQUIRE(work.ok());
    REQUIRE(target->put_file(*work + "/exp-1/env", "A=1\n").ok());
    // The SFTP server of this connection runs as "sshd: USER@internal-sftp"; kill only it (not
    // those of the other tests' servers running beside this one).
    const auto sessions = sshd.sftp_sessions();
    REQUIRE(!sessions.empty());
    for (const pid_t pid : sessions) REQUIRE(::kill(pid, SIGKILL) == 0);
    for (int i = 0; i < 500 && !sshd.sftp_sessions().empty(); ++i) std::this_thread::sleep_for(20ms);
    REQUIRE(sshd.sftp_sessions().empty());
    // The same work directory again (every part of the path exists, /tmp included), then a file.
    auto again = target->prepare_workdir("sweep-s");
    INFO((again.ok() ? std::string() : again.error().message));
    REQUIRE(again.ok());
    auto put = target->put_file(*work + "/exp-2/env", "B=2\n");
    INFO((put.ok() ? std::string() : put.error().message));
    REQUIRE(put.ok());
    CHECK(test::read_file(*work + "/exp-2/env") == "B=2\n");
}

TEST_CASE("ssh: the work directory's lock over SFTP refuses a second runner and is released",
          "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto first = sshd.connect();
    auto work = first->prepare_workdir("sweep-4-abc");
    REQUIRE(work.ok());
    REQUIRE(first->lock_workdir("sweep 4 (abc) of database /data/a.db").ok());
    const std::string lock = *work + "/ncclsweep.lock";
    CHECK(test::read_file(lock).find("holder: sweep 4 (abc) of database /data/a.db\n") == 0);
    // Another host of this runner's pool on the same shared filesystem: the lock is its own.
    auto pool_host = sshd.connect();
    REQUIRE(pool_host->prepare_workdir("sweep-4-abc").ok());
    CHECK(pool_host->lock_workdir("sweep 4 (abc) of database /data/a.db").ok());
    pool_host.reset();
    CHECK(std::filesystem::exists(lock));  // still held by `first`
    // The holder ends: its lock goes with it.
    first.reset();
    CHECK_FALSE(std::filesystem::exists(lock));

    // Another runner, alive on this host (a process of its own), holds the directory.
    int hold[2];
    REQUIRE(::pipe(hold) == 0);
    const pid_t other = ::fork();
    REQUIRE(other >= 0);
    if (other == 0) {
        ::close(hold[1]);
        char byte = 0;
        (void)::read(hold[0], &byte, 1);
        _exit(0);
    }
    ::close(hold[0]);
    std::ofstream(lock) << "holder: sweep 4 (abc) of database /data/a.db\npid: " << other
                        << "\nhost: " << ncclsweep::host_name() << "\nprocess: " << process_identity(other)
                        << "\n";
    auto second = sshd.connect();
    REQUIRE(second->prepare_workdir("sweep-4-abc").ok());
    auto refused = second->lock_workdir("sweep 4 (abc) of database /data/b.db");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().kind == ErrorKind::infrastructure);
    CHECK(refused.error().message.find("in use by sweep 4 (abc) of database /data/a.db, run by pid " +
                                       std::to_string(other)) != std::string::npos);
    CHECK(refused.error().message.find("remove " + lock) != std::string::npos);
    // It is killed with -9 (here: it exits and is reaped): its lock is stale and is taken over.
    ::close(hold[1]);
    REQUIRE(::waitpid(other, nullptr, 0) == other);
    CHECK(second->lock_workdir("sweep 4 (abc) of database /data/b.db").ok());
    CHECK(test::read_file(lock).find("pid: " + std::to_string(::getpid())) != std::string::npos);
    second.reset();
    // One of another host cannot be judged from here: refused, with how to remove it.
    std::ofstream(lock) << "holder: sweep 4 (abc) of database /data/a.db\npid: 1\nhost: elsewhere.invalid\n";
    auto third = sshd.connect();
    REQUIRE(third->prepare_workdir("sweep-4-abc").ok());
    auto stale_elsewhere = third->lock_workdir("sweep 4 (abc) of database /data/a.db");
    REQUIRE_FALSE(stale_elsewhere.ok());
    CHECK(stale_elsewhere.error().message.find("pid 1 on host elsewhere.invalid") != std::string::npos);
}

TEST_CASE("ssh: the login shell runs once per connection, always the same fixed line", "[remote][ssh]") {
    // A real login shell's start-up file records every line sshd gives the shell.
    test::TestUser user("ncclsweep-rc", "/bin/bash",
                        {{".bashrc", "printf '%s\\n' \"$BASH_EXECUTION_STRING\" >> \"$HOME/logins\"\n"}});
    if (!user.available) return;
    std::filesystem::remove(user.home / "logins");
    TestSshd sshd;
    if (!sshd.available) return;
    user.allow_on(sshd);
    auto options = sshd.options();
    options.workdir_root = user.own(sshd.dir.path() / "rc-work").string();
    auto url = sshd.target_url();
    url.user = user.name;
    auto connected = SshTarget::connect(url, options);
    REQUIRE(connected.ok());
    auto& target = *connected;
    auto work = target->prepare_workdir("sweep-l");
    REQUIRE(work.ok());
    const std::string hostile = "it's \\' \"$(touch pwned)\" `touch pwned` %s\n{a,b} $HOME !! \\";
    for (int i = 0; i < 5; ++i) {
        REQUIRE(target->put_file(*work + "/exp/value", hostile + std::to_string(i)).ok());
        CHECK(run_to_end(*target, {"cat", *work + "/exp/value"}) == hostile + std::to_string(i));
        CHECK(run_to_end(*target, {"printf", "%s", hostile}) == hostile);
    }
    Command sleeper;
    sleeper.argv = {"sleep", unique_sleep()};
    auto p = target->start(sleeper);
    REQUIRE(p.ok());
    (*p)->kill(300ms);
    CHECK((*p)->exit_info()->signal == SIGTERM);
    auto out = target->capture({"echo", "captured"}, 10s);
    REQUIRE(out.ok());
    CHECK(*out == "captured\n");
    // 11 commands, a kill, a capture and 5 files: one login, whose command line is fixed.
    CHECK(user.lines_of("logins") == std::vector<std::string>{"exec /bin/sh -s"});
    CHECK(exec_channels(sshd) == 1);
    CHECK_FALSE(std::filesystem::exists(*work + "/pwned"));
}

TEST_CASE("ssh: a lost connection takes the commands its agent started with it", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    const std::string marker = unique_sleep();
    Command command;
    command.argv = {"sh", "-c", "sleep " + marker + " & echo up; wait"};
    auto p = target->start(command);
    REQUIRE(p.ok());
    OutputLine line;
    REQUIRE((*p)->poll(10s, line) == PollState::line);
    REQUIRE(line.text == "up");
    REQUIRE(processes_with(marker));
    sshd.drop_connections();  // the agent reads the end of its input and ends its groups
    PollState last;
    collect(**p, last, 20s);
    CHECK(last == PollState::lost);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        gone = !processes_with(marker);
        if (!gone) std::this_thread::sleep_for(50ms);
    }
    CHECK(gone);
    if (!gone) test::run_command({"pkill", "-KILL", "-f", "sleep " + marker});
    REQUIRE(target->reconnect().ok());
    CHECK(run_to_end(*target, {"echo", "again"}) == "again");
}

TEST_CASE("ssh: a group member left behind by its leader is ended after the drain grace", "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto options = sshd.options();
    options.process.drain_grace = 300ms;
    auto target = SshTarget::connect(sshd.target_url(), options);
    REQUIRE(target.ok());
    const std::string marker = unique_sleep();
    Command command;
    command.argv = {"sh", "-c", "sleep " + marker + " & echo leader done; exit 3"};
    auto p = (*target)->start(command);
    REQUIRE(p.ok());
    PollState last;
    auto lines = collect(**p, last);
    REQUIRE(last == PollState::exited);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].text == "leader done");
    CHECK((*p)->exit_info()->exit_code == 3);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        gone = !processes_with(marker);
        if (!gone) std::this_thread::sleep_for(50ms);
    }
    CHECK(gone);
    if (!gone) test::run_command({"pkill", "-KILL", "-f", "sleep " + marker});
}

TEST_CASE("ssh: Slurm's client commands run through the same agent when the login node is an ssh host",
          "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    auto commands = remote::login_node_commands(*target);
    for (int i = 0; i < 3; ++i) {
        auto out = commands->run({"sh", "-c", "echo 'JOB|RUNNING|None'; echo warn >&2; exit 2"});
        REQUIRE(out.ok());
        CHECK(out->out == "JOB|RUNNING|None\n");
        CHECK(out->err == "warn\n");
        CHECK(out->exit_code == 2);
    }
    CHECK(exec_channels(sshd) == 1);
}

TEST_CASE("ssh: get_file reads through SFTP, a missing file is none, and a FIFO is refused",
          "[remote][ssh]") {
    TestSshd sshd;
    if (!sshd.available) return;
    auto target = sshd.connect();
    auto work = target->prepare_workdir("sweep-g");
    REQUIRE(work.ok());
    REQUIRE(target->put_file(*work + "/exp-1/delivered", "a\nb\n").ok());
    auto read = target->get_file(*work + "/exp-1/delivered", 1 << 20);
    REQUIRE(read.ok());
    REQUIRE(read->has_value());
    CHECK(**read == "a\nb\n");
    auto missing = target->get_file(*work + "/exp-1/none", 100);
    REQUIRE(missing.ok());
    CHECK_FALSE(missing->has_value());
    const std::string fifo = *work + "/fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_FALSE(target->get_file(fifo, 100).ok());
}
