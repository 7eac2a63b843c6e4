// Reliability over a real sshd on 127.0.0.1: connections dropped mid-experiment while the
// server stays up, a wrong key, a changed host key, and a small load sweep.
#include <chrono>
#include <map>
#include <optional>
#include <thread>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

std::vector<std::string> run_args(const std::filesystem::path& spec, const std::string& db,
                                  std::vector<std::string> flags) {
    std::vector<std::string> args{"run", spec.string(), "--db", db};
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
}

/// "SHA256:..." of a public key file, as ssh-keygen prints it.
std::string sha256_fingerprint(const std::filesystem::path& public_key) {
    auto r = run_command({"ssh-keygen", "-l", "-E", "sha256", "-f", public_key.string()});
    const auto begin = r.out.find("SHA256:");
    if (begin == std::string::npos) return "";
    return r.out.substr(begin, r.out.find(' ', begin) - begin);
}

/// Number of samples of `metric` per experiment of the newest sweep in `db`, keyed by exp id.
std::map<int, int> samples_per_experiment(const std::string& db, const std::string& metric) {
    std::map<int, int> counts;
    for (const auto& row :
         sqlite_rows(db, "SELECT exp_id, count(*) FROM samples WHERE metric = '" + metric +
                             "' AND sweep_id = (SELECT max(id) FROM sweeps) GROUP BY exp_id"))
        if (row.size() == 2) counts[std::stoi(row[0])] = std::stoi(row[1]);
    return counts;
}

}  // namespace

/// Starts a two-experiment sweep over `sshd` whose first experiment hangs 4 s in warm-up, and
/// returns once that experiment's workload runs on the host (its pid; the test fails if it
/// never starts). Waiting for the process itself, not for a fixed time, is what makes the
/// fault land mid-experiment on a machine of any speed.
struct HangingSweep {
    TempDir dir;
    std::string db = (dir.path() / "r.db").string();
    std::filesystem::path remote = dir.path() / "remote";
    std::optional<SpawnedRun> run;
    pid_t workload = 0;

    HangingSweep(const TestSshd& sshd, const std::string& name) {
        auto spec = dir.write(
            "s.yaml", over_ssh(sim_spec(name, "  NCCL_PROTO: [LL, Simple]\n  inject: [\"hang@warmup:4\"]\n",
                                        1, "  stall: 30\n  total: 120\n"),
                               sshd, remote));
        run.emplace(spawn_ncclsweep(dir.path(), run_args(spec, db, sshd.flags())));
        workload = TestSshd::wait_for_process_in(remote / "sweep-1" / "exp-1", std::chrono::seconds(90));
        REQUIRE(workload != 0);
    }
};

TEST_CASE(
    "ssh faults: connections killed mid-experiment with the server still up reconnect and retry once then "
    "exit 0") {
    TestSshd sshd;
    if (!sshd.available) return;
    HangingSweep sweep(sshd, "ssh-drop");
    // Kills each connection's sshd and its children (the workload among them) while the
    // listener stays up; sshd may or may not report the workload's SIGKILL before it dies.
    sshd.drop_connections();
    auto done = finish(*sweep.run);
    INFO(done.err);
    REQUIRE(done.exit_code == 0);
    CHECK(done.err.find("reconnecting and retrying") != std::string::npos);
    auto experiments = latest_experiments(sweep.db);
    REQUIRE(experiments.size() == 2);
    CHECK(experiments[0].attempts == 2);
    CHECK(experiments[1].attempts == 1);
    for (const auto& e : experiments) CHECK(e.outcome.status == results::ExperimentStatus::ok);
    auto samples = samples_per_experiment(sweep.db, "tok_s");
    CHECK(samples == std::map<int, int>{{1, 1}, {2, 1}});  // recorded once, not once per attempt
    CHECK(integrity_check(sweep.db) == "ok");
}

TEST_CASE(
    "ssh faults: a workload SIGKILLed just before its connection dies is a lost connection and is retried") {
    TestSshd sshd;
    if (!sshd.available) return;
    HangingSweep sweep(sshd, "ssh-kill-then-drop");
    // The order a dying session can show: the workload is killed, its end reported, then the
    // connection's sshd dies. No clock: the session is killed once the workload has been
    // reaped. Whether the runner read the workload's end before the connection went
    // ("killed by signal 9 and the connection failed right after") or not (a plain lost
    // connection) depends on the scheduler; either way it is a lost connection, never a crash.
    const pid_t session = TestSshd::session_of(sweep.workload);
    REQUIRE(session > 1);
    REQUIRE(::kill(sweep.workload, SIGKILL) == 0);
    while (std::filesystem::exists("/proc/" + std::to_string(sweep.workload)))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(::kill(session, SIGKILL) == 0);
    auto done = finish(*sweep.run);
    INFO(done.err);
    REQUIRE(done.exit_code == 0);
    CHECK(done.err.find("connection lost") != std::string::npos);
    CHECK(done.err.find("reconnecting and retrying") != std::string::npos);
    auto experiments = latest_experiments(sweep.db);
    REQUIRE(experiments.size() == 2);
    CHECK(experiments[0].attempts == 2);
    for (const auto& e : experiments) CHECK(e.outcome.status == results::ExperimentStatus::ok);
}

TEST_CASE("ssh faults: a workload SIGKILLed while its connection stays up is recorded as its own failure") {
    TestSshd sshd;
    if (!sshd.available) return;
    HangingSweep sweep(sshd, "ssh-kill-only");
    REQUIRE(::kill(sweep.workload, SIGKILL) == 0);  // as the OOM killer would
    auto done = finish(*sweep.run);
    INFO(done.err);
    CHECK(done.exit_code != 3);
    CHECK(done.err.find("reconnecting") == std::string::npos);
    auto experiments = latest_experiments(sweep.db);
    REQUIRE(experiments.size() == 2);
    CHECK(experiments[0].attempts == 1);
    CHECK(experiments[0].outcome.status == results::ExperimentStatus::failed);
    CHECK(experiments[0].outcome.exit_signal == SIGKILL);
    CHECK(experiments[1].outcome.status == results::ExperimentStatus::ok);
}

TEST_CASE("ssh faults: a key the host does not accept is refused with exit 3 and nothing runs") {
    TestSshd sshd;
    if (!sshd.available) return;
    TempDir dir;
    const auto remote = dir.path() / "remote";
    auto spec = dir.write(
        "s.yaml", over_ssh(sim_spec("ssh-auth", "  NCCL_PROTO: [LL]\n", 1, k_ssh_timeouts), sshd, remote));
    const auto wrong_key = dir.path() / "wrong_key";
    REQUIRE(
        run_command({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", wrong_key.string()}).exit_code ==
        0);
    auto flags = sshd.flags();
    flags[3] = wrong_key.string();
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep(run_args(spec, db, flags));
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("authentication as") != std::string::npos);
    CHECK(r.err.find(wrong_key.string()) != std::string::npos);
    CHECK(r.err.find("authorized_keys") != std::string::npos);  // what to do
    CHECK_FALSE(std::filesystem::exists(db));
    CHECK_FALSE(std::filesystem::exists(remote));
}

TEST_CASE(
    "ssh faults: a changed host key is refused with its fingerprint and exit 3 and nothing runs on the "
    "host") {
    TestSshd sshd;
    if (!sshd.available) return;
    TempDir dir;
    const auto remote = dir.path() / "remote";
    auto spec = dir.write(
        "s.yaml", over_ssh(sim_spec("ssh-hostkey", "  NCCL_PROTO: [LL]\n", 1, k_ssh_timeouts), sshd, remote));
    // known_hosts lists another key of the same type for [127.0.0.1]:PORT.
    const auto other = dir.path() / "other_host_key";
    REQUIRE(run_command({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other.string()}).exit_code ==
            0);
    const std::string other_pub = read_file(other.string() + ".pub");
    auto known = dir.write("known_hosts",
                           "[127.0.0.1]:" + std::to_string(sshd.port) + " " +
                               other_pub.substr(0, other_pub.find(' ', other_pub.find(' ') + 1)) + "\n");
    auto flags = sshd.flags();
    flags[1] = known.string();
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep(run_args(spec, db, flags));
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("HOST KEY CHANGED") != std::string::npos);
    const std::string presented = sha256_fingerprint(sshd.dir.path() / "host_key.pub");
    REQUIRE_FALSE(presented.empty());
    CHECK(r.err.find(presented) != std::string::npos);  // the key the host now presents
    CHECK(r.err.find("Nothing was run") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));
    CHECK_FALSE(std::filesystem::exists(remote));
    CHECK(read_file(known).find(other_pub.substr(0, 40)) != std::string::npos);  // known_hosts left alone
}

TEST_CASE(
    "ssh load: a sweep of 12 simulated experiments over ssh records each once (the full 1000 is "
    "scripts/bench-overhead.sh)") {
    TestSshd sshd;
    if (!sshd.available) return;
    TempDir dir;
    std::string seeds;
    for (int i = 1; i <= 12; ++i) seeds += (i > 1 ? ", " : "") + std::to_string(i);
    auto spec =
        dir.write("s.yaml", over_ssh(sim_spec("ssh-load", "  seed: [" + seeds + "]\n", 1, k_ssh_timeouts),
                                     sshd, dir.path() / "remote"));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep(run_args(spec, db, sshd.flags()));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 12);
    for (const auto& e : experiments) {
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        CHECK(e.attempts == 1);
    }
    CHECK(samples_per_experiment(db, "tok_s").size() == 12);
}
