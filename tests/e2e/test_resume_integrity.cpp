// End-to-end: a sweep's plan fingerprint. An interrupted sweep prints a resume command that
// reproduces its flags; a resume with different flags is refused (exit 2) naming what differs
// and leaves the database byte-identical; an engine that is not there is exit 2 before any
// sweep is recorded.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

int finished_count(const std::string& db) {
    int done = 0;
    if (std::filesystem::exists(db))
        for (const auto& e : latest_experiments(db)) done += results::is_finished(e.outcome.status) ? 1 : 0;
    return done;
}

}  // namespace

TEST_CASE(
    "resume: an interrupted sweep names its own flags, refuses other ones and writes nothing when it "
    "refuses") {
    TempDir dir;
    // The points with tokens=2 wait for a gate file that opens only before the last resume: when
    // the interrupt comes, one experiment has finished and the next one runs, on any machine.
    const auto gate = dir.path() / "gate";
    auto workload = dir.write("workload.sh", "[ \"$1\" != 2 ] || while [ ! -e '" + gate.string() +
                                                 "' ]; do sleep 0.05; done\necho tok_s=$((10 + $1))\n");
    // baseline: none: the test counts the experiments of an interrupted sweep, not the defaults point.
    auto spec = dir.write("s.yaml",
                          "sweep: e2e-integrity\ntarget: local\nbaseline: none\nworkload:\n  command: [sh, " +
                              workload.string() +
                              ", \"{tokens}\"]\n  metrics:\n    tok_s: 'tok_s=([0-9]+)'\n"
                              "axes:\n  NCCL_PROTO: [LL, Simple]\n  tokens: [1]\n"
                              "timeouts:\n  stall: 600\n  total: 600\n");
    const std::string db = (dir.path() / "r.db").string();
    SpawnedRun running =
        spawn_ncclsweep(dir.path(), {"run", spec.string(), "--axis", "tokens=1,2", "--db", db});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (finished_count(db) < 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(running.pid, SIGINT);
    FinishedRun interrupted = finish(running);
    INFO(interrupted.err);
    REQUIRE(interrupted.exit_code == 3);
    const std::string hint =
        "ncclsweep run " + spec.string() + " --axis tokens=1,2 --db " + db + " --resume 1";
    CHECK(interrupted.err.find("continue it with: " + hint) != std::string::npos);

    const std::string before = read_file(db);
    REQUIRE_FALSE(before.empty());
    auto other = run_ncclsweep({"run", spec.string(), "--axis", "tokens=1,4", "--db", db, "--resume"});
    INFO(other.err);
    CHECK(other.exit_code == 2);
    CHECK(other.err.find("--axis/--set: was '--axis tokens=1,2', now '--axis tokens=1,4'") !=
          std::string::npos);
    CHECK(other.err.find(hint) != std::string::npos);
    CHECK(read_file(db) == before);
    auto listed = run_ncclsweep({"results", "list", "--db", db});
    CHECK(listed.out.find("interrupted") != std::string::npos);
    CHECK(listed.out.find("runner gone") == std::string::npos);

    // The printed command finishes it.
    dir.write("gate", "open\n");
    auto resumed = run_ncclsweep({"run", spec.string(), "--axis", "tokens=1,2", "--db", db, "--resume", "1"});
    INFO(resumed.err);
    REQUIRE(resumed.exit_code == 0);
    auto all = latest_experiments(db);
    REQUIRE(all.size() == 4);
    for (const auto& e : all) CHECK(e.outcome.status == results::ExperimentStatus::ok);
}

TEST_CASE("run: an engine that does not exist or cannot run is bad input and records no sweep") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("e2e-no-engine", "  NCCL_PROTO: [LL]\n"));
    const std::string db = (dir.path() / "r.db").string();
    auto missing = run_ncclsweep({"run", spec.string(), "--db", db, "--engine", "/nonexistent/tpverify"});
    INFO(missing.err);
    CHECK(missing.exit_code == 2);
    CHECK(missing.err.find("the engine '/nonexistent/tpverify' does not exist") != std::string::npos);
    CHECK(missing.err.find("--resume") == std::string::npos);
    CHECK(missing.err.find("lost") == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));

    auto not_executable = dir.write("tpverify", "#!/bin/sh\nexit 0\n");
    ::chmod(not_executable.c_str(), 0644);
    auto plain = run_ncclsweep({"run", spec.string(), "--db", db, "--engine", not_executable.string()});
    INFO(plain.err);
    CHECK(plain.exit_code == 2);
    CHECK(plain.err.find("is not an executable file") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));
}

TEST_CASE("run: a workload command that is not on PATH is bad input and records no sweep") {
    TempDir dir;
    auto spec = dir.write("c.yaml",
                          "sweep: e2e-no-command\n"
                          "target: local\n"
                          "workload:\n"
                          "  command: [no-such-server-xyz, --port, '8000']\n"
                          "axes:\n"
                          "  NCCL_PROTO: [LL]\n");
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("'no-such-server-xyz' is not on PATH") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));
}

TEST_CASE("plan: a client placeholder that names no parameter is exit 2 with its place in the spec") {
    TempDir dir;
    auto spec = dir.write("c.yaml",
                          "sweep: e2e-client\n"
                          "target: local\n"
                          "workload:\n"
                          "  command: [/bin/true]\n"
                          "  client: [/bin/true, '--rate={rat}']\n"
                          "axes:\n"
                          "  rate: [1, 2]\n");
    auto r = run_ncclsweep({"plan", spec.string()});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("client:") != std::string::npos);
    CHECK(r.err.find("{rat}") != std::string::npos);
    CHECK(r.err.find("c.yaml:5") != std::string::npos);
}
