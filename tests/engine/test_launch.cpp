// The rank launcher with /bin/sh standing in for tpverify's rank processes: each gets
// "--rank R --nranks N" and $TPVERIFY_BOOTSTRAP_FDS, as a real rank would.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/launch/launch.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify;

namespace {
/// A launch of `/bin/sh -c SCRIPT`; the script sees $1 = R (the rank) and $3 = N.
LaunchSpec sh(const std::string& script, int nranks) {
    LaunchSpec spec;
    spec.exe = "/bin/sh";
    spec.args = {"-c", script, "sh"};  // "sh" is $0: the launcher's --rank R --nranks N follow
    spec.nranks = nranks;
    spec.bootstrap_timeout_s = 10;
    return spec;
}
// Rank 0 writes a 128-byte id (128 'x') to its write fd; the others read it and check it.
const std::string k_bootstrap =
    "fds=$TPVERIFY_BOOTSTRAP_FDS; r=${fds%,*}; w=${fds#*,}; "
    "if [ \"$2\" = 0 ]; then printf '%0128d' 0 | tr 0 x >&\"$w\" || exit 9; "
    "else id=$(head -c 128 <&\"$r\"); [ \"$id\" = \"$(printf '%0128d' 0 | tr 0 x)\" ] || exit 8; fi; ";
}  // namespace

TEST_CASE("launch: bootstrap fds parse") {
    BootstrapFds f;
    CHECK(parse_bootstrap_fds("5,-1", f));
    CHECK((f.read_fd == 5 && f.write_fd == -1));
    CHECK(parse_bootstrap_fds("-1,7", f));
    CHECK(f.write_fd == 7);
    CHECK_FALSE(parse_bootstrap_fds(nullptr, f));
    CHECK_FALSE(parse_bootstrap_fds("", f));
    CHECK_FALSE(parse_bootstrap_fds("5", f));
    CHECK_FALSE(parse_bootstrap_fds("5,x", f));
    CHECK_FALSE(parse_bootstrap_fds("-1,-1", f));
}

TEST_CASE("launch: every rank gets its rank, the id from rank 0, and all ending well is success") {
    LaunchOutcome out = launch_ranks(sh(k_bootstrap + "[ \"$1\" = --rank ] && [ \"$4\" = 3 ] || exit 7", 3));
    INFO(out.message);
    CHECK(out.exit_status == 0);
    CHECK(out.failed_rank == -1);
}

TEST_CASE("launch: one rank failing ends all ranks at once with that rank's status") {
    ncclsweep::test::TempDir dir;
    // Rank 2 fails after the bootstrap, once every rank has written its pid; the others would run
    // for an hour, longer than any test may: a launch that waited for them could not pass. They
    // exec the sleep, so each rank process is the sleep itself (a sleep left behind by a killed
    // shell would also hold CTest's output pipe open).
    const std::string d = "'" + dir.path().string() + "'";
    LaunchOutcome out = launch_ranks(
        sh("echo $$ > " + d + "/.pid-\"$2\" && mv " + d + "/.pid-\"$2\" " + d + "/rank-\"$2\".pid; " +
               k_bootstrap + "if [ \"$2\" = 2 ]; then " + "i=0; while [ \"$(ls " + d +
               " | wc -l)\" -lt 4 ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done; " +
               "exit 5; fi; exec sleep 3600",
           4));
    CHECK(out.exit_status == 5);
    CHECK(out.failed_rank == 2);
    CHECK(out.message.find("rank 2 of 4 ended with exit status 5") != std::string::npos);
    // The other three are gone (killed and reaped), not left running.
    for (int r : {0, 1, 3}) {
        const std::string pid =
            ncclsweep::test::read_file(dir.path() / ("rank-" + std::to_string(r) + ".pid"));
        INFO("rank " << r << " pid " << pid);
        REQUIRE(!pid.empty());
        errno = 0;
        CHECK(::kill(std::stoi(pid), 0) == -1);
        CHECK(errno == ESRCH);
    }
}

TEST_CASE("launch: a rank killed by a signal is named with the signal") {
    // Rank 0 would sleep for an hour: the launch ends because rank 1 died, not because it waited.
    LaunchOutcome out =
        launch_ranks(sh(k_bootstrap + "if [ \"$2\" = 1 ]; then kill -9 $$; fi; exec sleep 3600", 2));
    CHECK(out.exit_status == 1);
    CHECK(out.failed_rank == 1);
    CHECK(out.message.find("signal 9") != std::string::npos);
}

TEST_CASE("launch: rank 0 dying before the id is handed over fails the launch") {
    LaunchOutcome out = launch_ranks(sh("if [ \"$2\" = 0 ]; then exit 4; fi; exec sleep 3600", 2));
    CHECK(out.exit_status == 4);
    CHECK(out.failed_rank == 0);
}

TEST_CASE("launch: read_exact reports end of file and time-outs") {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    char buf[8];
    REQUIRE(write_all(fds[1], "abc", 3).empty());
    CHECK(read_exact(fds[0], buf, 8, 0.05).find("timed out") != std::string::npos);
    close(fds[1]);
    CHECK(read_exact(fds[0], buf, 8, 1).find("closed") != std::string::npos);
    close(fds[0]);
}

namespace {
/// A file the launcher relays into, closed at scope exit.
struct Sink {
    ncclsweep::test::TempDir dir;
    std::string path;
    int fd;
    explicit Sink(const char* name)
        : path((dir.path() / name).string()), fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600)) {}
    ~Sink() { ::close(fd); }
    std::vector<std::string> lines() const {
        std::istringstream in(ncclsweep::test::read_file(path));
        std::vector<std::string> out;
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }
};
// 150 characters of padding, so that a torn line would show.
const std::string k_pad(150, 'p');
}  // namespace

TEST_CASE("launch: three ranks flooding stdout, stderr and NCCL_DEBUG_FILE: every line whole, in order") {
    Sink out("out"), err("err");
    constexpr int k_lines = 2000;
    const std::string n = std::to_string(k_lines);
    // Each rank writes k_lines lines to each of its three outputs at once (three background
    // loops), then rank 0 its result line.
    LaunchSpec spec =
        sh(k_bootstrap + "exec 3>\"$NCCL_DEBUG_FILE\"; " + "(i=0; while [ $i -lt " + n +
               " ]; do echo \"out $2 $i " + k_pad + "\"; i=$((i+1)); done) & " + "(i=0; while [ $i -lt " + n +
               " ]; do echo \"err $2 $i " + k_pad + "\" >&2; i=$((i+1)); done) & " + "(i=0; while [ $i -lt " +
               n + " ]; do echo \"NCCL INFO $2 $i " + k_pad + "\" >&3; i=$((i+1)); done) & wait; " +
               "if [ \"$2\" = 0 ]; then echo '{\"event\":\"result\",\"tok_s\":1}'; fi",
           3);
    spec.out_fd = out.fd;
    spec.err_fd = err.fd;
    LaunchOutcome outcome = launch_ranks(spec);
    INFO(outcome.message);
    REQUIRE(outcome.exit_status == 0);
    // next[stream][rank]: the index the next line of that stream must carry.
    std::map<std::string, std::map<int, int>> next;
    int results = 0, other = 0;
    auto take = [&](const std::string& line, bool on_stderr) {
        if (line == "{\"event\":\"result\",\"tok_s\":1}") return ++results, void();
        std::string body = line;
        int prefixed = -1;
        if (body.rfind("[rank ", 0) == 0) {
            prefixed = std::stoi(body.substr(6));
            body = body.substr(body.find("] ") + 2);
        }
        std::istringstream words(body);
        std::string kind, pad;
        int rank = -1, index = -1;
        words >> kind;
        if (kind == "NCCL") words >> kind;  // "NCCL INFO r i pad"
        words >> rank >> index >> pad;
        const bool whole = pad == k_pad && words.rdbuf()->in_avail() == 0;
        // Rank 0's stdout is the event stream: it alone comes without a prefix.
        const bool prefix_right = (kind == "out" && rank == 0) ? prefixed == -1 : prefixed == rank;
        const bool stream_right = on_stderr == (kind == "err");
        if (!whole || !prefix_right || !stream_right || next[kind][rank] != index) {
            ++other;
            UNSCOPED_INFO("unexpected line: " << line.substr(0, 80));
            return;
        }
        ++next[kind][rank];
    };
    for (const std::string& l : out.lines()) take(l, false);
    for (const std::string& l : err.lines()) take(l, true);
    CHECK(results == 1);
    CHECK(other == 0);
    for (const char* kind : {"out", "err", "INFO"})
        for (int r = 0; r < 3; ++r) {
            INFO(kind << " of rank " << r);
            CHECK(next[kind][r] == k_lines);
        }
}

TEST_CASE("launch: a rank killed by SIGKILL keeps the WARN lines and the partial line it wrote") {
    Sink out("out"), err("err");
    LaunchSpec spec = sh(k_bootstrap +
                             "if [ \"$2\" = 1 ]; then exec 3>\"$NCCL_DEBUG_FILE\"; "
                             "echo 'NCCL WARN Cuda failure before the kill' >&3; printf 'half a line' >&3; "
                             "echo 'tpverify: replay: about to die' >&2; kill -9 $$; fi; exec sleep 60",
                         2);
    spec.out_fd = out.fd;
    spec.err_fd = err.fd;
    LaunchOutcome outcome = launch_ranks(spec);
    CHECK(outcome.failed_rank == 1);
    CHECK(outcome.message.find("signal 9") != std::string::npos);
    const std::vector<std::string> o = out.lines(), e = err.lines();
    CHECK(std::find(o.begin(), o.end(), "[rank 1] NCCL WARN Cuda failure before the kill") != o.end());
    CHECK(std::find(o.begin(), o.end(), "[rank 1] half a line") != o.end());
    CHECK(std::find(e.begin(), e.end(), "[rank 1] tpverify: replay: about to die") != e.end());
}

TEST_CASE("launch: the caller's NCCL_DEBUG_FILE is left alone") {
    Sink out("out"), err("err");
    ncclsweep::test::TempDir dir;
    const std::string file = (dir.path() / "nccl.%p").string();
    ::setenv("NCCL_DEBUG_FILE", file.c_str(), 1);
    LaunchSpec spec = sh(k_bootstrap + "echo \"file=$NCCL_DEBUG_FILE\"", 1);
    spec.out_fd = out.fd;
    spec.err_fd = err.fd;
    LaunchOutcome outcome = launch_ranks(spec);
    ::unsetenv("NCCL_DEBUG_FILE");
    REQUIRE(outcome.exit_status == 0);
    const std::vector<std::string> o = out.lines();
    REQUIRE(o.size() == 1);
    CHECK(o[0] == "file=" + file);
}
