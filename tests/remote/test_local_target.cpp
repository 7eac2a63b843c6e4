#include "remote/local_target.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace std::chrono_literals;
using remote::LocalTarget;

namespace {

struct Collected {
    std::vector<OutputLine> lines;
    PollState last = PollState::timeout;
};

/// Polls until exited/lost or `limit` passes.
Collected collect(Process& p, std::chrono::milliseconds limit = 20s) {
    Collected c;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    OutputLine line;
    while (std::chrono::steady_clock::now() < deadline) {
        c.last = p.poll(200ms, line);
        if (c.last == PollState::line) c.lines.push_back(line);
        if (c.last == PollState::exited || c.last == PollState::lost) break;
    }
    return c;
}

std::unique_ptr<Process> start(LocalTarget& t, std::vector<std::string> argv,
                               std::vector<Assignment> env = {}, std::string workdir = {}) {
    Command c;
    c.argv = std::move(argv);
    c.env = std::move(env);
    c.workdir = std::move(workdir);
    auto p = t.start(c);
    REQUIRE(p.ok());
    return std::move(*p);
}

/// Gone or a zombie waiting for init (this container's pid 1 may not reap).
bool process_gone(pid_t pid) {
    if (::kill(pid, 0) != 0) return true;
    const std::string text = test::read_file("/proc/" + std::to_string(pid) + "/stat");  // "" once gone
    const auto paren = text.rfind(')');
    return paren == std::string::npos || text.substr(paren + 2, 1) == "Z";
}

/// True once `pid` is gone: a SIGKILL reaches it asynchronously, so this polls (at most 10 s).
bool becomes_gone(pid_t pid) {
    for (int i = 0; i < 1000; ++i) {
        if (process_gone(pid)) return true;
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

}  // namespace

TEST_CASE("local: lines of both streams arrive in order with exit status", "[remote][local]") {
    LocalTarget t;
    auto p = start(t, {"sh", "-c", "echo one; echo two >&2; sleep 0.05; echo three; exit 7"});
    auto c = collect(*p);
    REQUIRE(c.last == PollState::exited);
    REQUIRE(c.lines.size() == 3);
    CHECK(c.lines[0].text == "one");
    CHECK(c.lines[0].stream == Stream::out);
    CHECK(c.lines[1].text == "two");
    CHECK(c.lines[1].stream == Stream::err);
    CHECK(c.lines[2].text == "three");
    REQUIRE(p->exit_info());
    CHECK(p->exit_info()->exit_code == 7);
    CHECK_FALSE(p->exit_info()->success());
    CHECK(p->process_group().has_value());
}

TEST_CASE("local: death by signal is reported as the signal", "[remote][local]") {
    LocalTarget t;
    auto p = start(t, {"sh", "-c", "kill -SEGV $$"});
    auto c = collect(*p);
    REQUIRE(c.last == PollState::exited);
    CHECK(p->exit_info()->signal == SIGSEGV);
}

TEST_CASE("local: a missing program or workdir is an error, not a process", "[remote][local]") {
    LocalTarget t;
    Command c;
    c.argv = {"ncclsweep-no-such-program-xyz"};
    auto p = t.start(c);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().message.find("not found in PATH") != std::string::npos);
    c.argv = {"true"};
    c.workdir = "/nonexistent/dir/xyz";
    auto q = t.start(c);
    REQUIRE_FALSE(q.ok());
    CHECK(q.error().message.find("/nonexistent/dir/xyz") != std::string::npos);
}

TEST_CASE("local: kill ends the whole group including children", "[remote][local]") {
    LocalTarget t;
    auto p =
        start(t, {"sh", "-c", "sleep 1000 & echo child:$!; trap '' TERM; sleep 1000 & echo child:$!; wait"});
    std::vector<pid_t> children;
    OutputLine line;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (children.size() < 2 && std::chrono::steady_clock::now() < deadline) {
        if (p->poll(200ms, line) == PollState::line) children.push_back(std::stoi(line.text.substr(6)));
    }
    REQUIRE(children.size() == 2);
    // The second child ignores SIGTERM and sleeps for 1000 s: kill returns because it escalates
    // to SIGKILL after the grace, not because the child ended (a kill that waited would hang).
    p->kill(300ms);
    REQUIRE(p->exit_info());
    CHECK(p->exit_info()->signal != 0);
    CHECK(p->poll(10ms, line) == PollState::exited);
    p->kill(300ms);  // idempotent
    for (pid_t child : children) CHECK(becomes_gone(child));
}

TEST_CASE("local: a child holding the pipes after the leader exits does not hang poll", "[remote][local]") {
    remote::LocalOptions options;
    options.process.drain_grace = 300ms;
    LocalTarget t(options);
    auto p = start(t, {"sh", "-c", "sleep 1000 & echo child:$!; echo bye; exit 3"});
    // The child holds the pipes for 1000 s: exited (not the 60 s limit of collect) means poll
    // gave up on the pipes after the drain grace.
    auto c = collect(*p, 60s);
    REQUIRE(c.last == PollState::exited);
    REQUIRE(c.lines.size() == 2);
    CHECK(p->exit_info()->exit_code == 3);
    const pid_t child = std::stoi(c.lines[0].text.substr(6));
    CHECK(becomes_gone(child));
}

TEST_CASE("local: a 10 MB line without newline is cut and the next line still arrives", "[remote][local]") {
    remote::LocalOptions options;
    options.process.line_limit = 64 * 1024;
    LocalTarget t(options);
    auto p = start(t, {"sh", "-c", "head -c 10000000 /dev/zero | tr '\\0' x; echo; echo after"});
    auto c = collect(*p, 30s);
    REQUIRE(c.last == PollState::exited);
    REQUIRE(c.lines.size() == 2);
    CHECK(c.lines[0].truncated);
    CHECK(c.lines[0].text.size() == 64 * 1024);
    CHECK(c.lines[0].text.find_first_not_of('x') == std::string::npos);
    CHECK(c.lines[1].text == "after");
    CHECK(p->exit_info()->success());
}

TEST_CASE("local: a 100 MB flood is read completely", "[remote][local]") {
    LocalTarget t;
    // 100 MB of 100-byte lines.
    auto p = start(t, {"sh", "-c", "yes '" + std::string(99, 'a') + "' | head -n 1000000"});
    std::size_t lines = 0, bytes = 0;
    OutputLine line;
    PollState state;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while ((state = p->poll(1s, line)) != PollState::exited && std::chrono::steady_clock::now() < deadline) {
        if (state == PollState::line) {
            ++lines;
            bytes += line.text.size() + 1;
        }
    }
    CHECK(state == PollState::exited);
    CHECK(lines == 1000000);
    CHECK(bytes == 100000000);
}

TEST_CASE("local: binary garbage passes through", "[remote][local]") {
    LocalTarget t;
    auto p = start(t, {"printf", "\\000\\377\\033[1m\\n"});
    auto c = collect(*p);
    REQUIRE(c.lines.size() == 1);
    CHECK(c.lines[0].text == std::string("\0\xff\x1b[1m", 6));
}

TEST_CASE("local: env overrides, PYTHONPATH prefix and working directory", "[remote][local]") {
    test::TempDir dir;
    LocalTarget t;
    const std::string hostile = "it's \"$(touch pwned)\" `id` ;\nline2 \xc3\xa9";
    Command c;
    c.argv = {"sh", "-c", "printf '%s|' \"$NCCL_X\" \"$HOME_SET\" \"$PWD\" \"$PYTHONPATH\""};
    c.env = {{"NCCL_X", hostile}, {"HOME_SET", "1"}, {"PYTHONPATH", "/old"}};
    c.workdir = dir.path().string();
    c.pythonpath_prepend = "/site";
    auto p = t.start(c);
    REQUIRE(p.ok());
    auto got = collect(**p);
    std::string text;
    for (const auto& l : got.lines) text += l.text + "\n";
    CHECK(text == hostile + "|1|" + dir.path().string() + "|/site:/old|\n");
    CHECK_FALSE(std::filesystem::exists(dir.path() / "pwned"));
}

TEST_CASE("local: prepare_workdir, put_file (atomic, parents) and capture", "[remote][local]") {
    test::TempDir dir;
    remote::LocalOptions options;
    options.workdir_root = (dir.path() / "root").string();
    LocalTarget t(options);
    auto work = t.prepare_workdir("sweep-1");
    REQUIRE(work.ok());
    CHECK(std::filesystem::is_directory(*work));
    CHECK_FALSE(t.prepare_workdir("../evil").ok());
    const std::string file = *work + "/a/b/site/sitecustomize.py";
    REQUIRE(t.put_file(file, "x = 1\n").ok());
    REQUIRE(t.put_file(file, "x = 2\n").ok());
    CHECK(test::read_file(file) == "x = 2\n");
    CHECK(std::distance(std::filesystem::directory_iterator(*work + "/a/b/site"), {}) == 1);  // no temp left
    auto pwd = t.capture({"pwd"}, 5s);  // commands run in the prepared work dir by default
    REQUIRE(pwd.ok());
    CHECK(*pwd == *work + "\n");
    auto fail = t.capture({"sh", "-c", "echo oops >&2; exit 4"}, 5s);
    REQUIRE_FALSE(fail.ok());
    CHECK(fail.error().message.find("status 4") != std::string::npos);
    CHECK(fail.error().message.find("oops") != std::string::npos);
    auto slow = t.capture({"sleep", "10"}, std::chrono::seconds(1));
    REQUIRE_FALSE(slow.ok());
    CHECK(slow.error().message.find("did not finish") != std::string::npos);
}

TEST_CASE("local: the work directory is locked, a second runner is refused naming the first",
          "[remote][local]") {
    test::TempDir dir;
    remote::LocalOptions options;
    options.workdir_root = (dir.path() / "root").string();
    auto first = std::make_unique<LocalTarget>(options);
    REQUIRE(first->prepare_workdir("sweep-3-abc").ok());
    REQUIRE(first->lock_workdir("sweep 3 (abc) of database /data/a.db").ok());
    // Another runner (another database's copy of the sweep, a second resume) on the same directory.
    LocalTarget second(options);
    REQUIRE(second.prepare_workdir("sweep-3-abc").ok());
    auto refused = second.lock_workdir("sweep 3 (abc) of database /data/b.db");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().kind == ErrorKind::infrastructure);
    CHECK(refused.error().message.find("is in use by sweep 3 (abc) of database /data/a.db, run by pid " +
                                       std::to_string(::getpid())) != std::string::npos);
    // A workload started by the holder does not inherit the lock: it ends with its runner.
    auto fds = start(*first, {"sh", "-c", "ls -l /proc/$$/fd"});
    std::string listing;
    for (const auto& line : collect(*fds).lines) listing += line.text + "\n";
    INFO(listing);
    CHECK(listing.find("ncclsweep.lock") == std::string::npos);
    // Its runner gone (however it ended: the kernel drops a flock with the last descriptor).
    first.reset();
    CHECK(second.lock_workdir("sweep 3 (abc) of database /data/b.db").ok());
    // Other sweeps' directories are other locks.
    LocalTarget third(options);
    REQUIRE(third.prepare_workdir("sweep-3-def").ok());
    CHECK(third.lock_workdir("sweep 3 (def) of database /data/c.db").ok());
}

TEST_CASE("local: put_file never writes through a name planted in a shared work directory",
          "[remote][local]") {
    test::TempDir dir;
    LocalTarget t;
    const auto victim = dir.write("victim.txt", "precious\n");
    const std::string path = (dir.path() / "work" / "sitecustomize.py").string();
    std::filesystem::create_directories(dir.path() / "work");
    // Another user of the directory links the temporary name this process would use at the victim.
    std::filesystem::create_symlink(victim, path + ".tmp." + std::to_string(::getpid()));
    REQUIRE(t.put_file(path, "x = 1\n").ok());
    CHECK(test::read_file(victim) == "precious\n");
    CHECK(test::read_file(path) == "x = 1\n");
    CHECK(std::filesystem::is_symlink(path + ".tmp." + std::to_string(::getpid())));  // left alone
}

TEST_CASE("local: get_file reads regular files, and neither waits on a FIFO nor follows a link",
          "[remote][local]") {
    test::TempDir dir;
    LocalTarget t;
    const auto file = dir.write("delivered", "line 1\nline 2\n");
    auto whole = t.get_file(file.string(), 1 << 20);
    REQUIRE(whole.ok());
    REQUIRE(whole->has_value());
    CHECK(**whole == "line 1\nline 2\n");
    auto cut = t.get_file(file.string(), 6);
    REQUIRE(cut.ok());
    CHECK(**cut == "line 1");
    auto missing = t.get_file((dir.path() / "none").string(), 100);
    REQUIRE(missing.ok());
    CHECK_FALSE(missing->has_value());
    const std::string fifo = (dir.path() / "fifo").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto refused = t.get_file(fifo, 100);  // returns at once: O_NONBLOCK, then not a regular file
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("not a regular file") != std::string::npos);
    std::filesystem::create_symlink(file, dir.path() / "link");
    CHECK_FALSE(t.get_file((dir.path() / "link").string(), 100).ok());
}

TEST_CASE("local: a PYTHONPATH directory with ':' or a newline is refused, not silently split",
          "[remote][local]") {
    LocalTarget t;
    for (const std::string bad : {"/tmp/a:b/exp-1", "/tmp/a\nb/exp-1"}) {
        Command c;
        c.argv = {"true"};
        c.pythonpath_prepend = bad;
        auto refused = t.start(c);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().kind == ErrorKind::bad_input);
        CHECK(refused.error().message.find("cannot go on PYTHONPATH") != std::string::npos);
    }
}
