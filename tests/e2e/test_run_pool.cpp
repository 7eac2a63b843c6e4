// A pool of ssh hosts (`target.hosts`): two real sshds on 127.0.0.1, each one host of the
// pool; the sweep runs one experiment per host at a time, both hosts at once, and records
// every experiment once through the one store writer.
#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

TEST_CASE("pool: two ssh hosts run experiments in parallel and each experiment is recorded once") {
    TestSshd first;
    if (!first.available) return;
    TestSshd second;
    if (!second.available) return;
    TempDir dir;
    // One client key for both hosts, one known_hosts file with both host keys.
    {
        std::ofstream keys(second.dir.path() / "authorized_keys", std::ios::app);
        keys << read_file(first.dir.path() / "user_key.pub");
    }
    auto known = dir.write("known_hosts", read_file(first.dir.path() / "known_hosts") +
                                              read_file(second.dir.path() / "known_hosts"));
    // Each task ends only once two tasks have started (it polls their start files, for at most
    // two minutes): the first two overlap whenever the pool runs both hosts at once, however
    // long an ssh command takes to start on a loaded machine, and never if it does not.
    const std::string starts = (dir.path() / "start-").string();
    auto task = dir.write("task.sh", "echo \"$(date +%s.%N)\" > " + starts +
                                         "\"$1\"\n"
                                         "i=0; while [ \"$(ls " +
                                         starts +
                                         "* | wc -l)\" -lt 2 ] && [ $i -lt 2400 ]; do sleep 0.05; "
                                         "i=$((i+1)); done\n"
                                         "echo \"$(date +%s.%N)\" > " +
                                         (dir.path() / "end-").string() +
                                         "\"$1\"\n"
                                         "echo tok_s=1\n");
    auto spec = dir.write("s.yaml",
                          "sweep: pool\n"
                          "target:\n"
                          "  hosts: [" +
                              first.url() + ", " + second.url() +
                              "]\n"
                              "  workdir: " +
                              (dir.path() / "remote").string() +
                              "\n"
                              "workload:\n"
                              "  command: [/bin/sh, " +
                              task.string() +
                              ", \"{mode}\"]\n"
                              "  metrics:\n"
                              "    tok_s: 'tok_s=([0-9.]+)'\n"
                              "axes:\n"
                              "  mode: [a, b, c, d]\n");
    std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db, "--known-hosts", known.string(), "--identity",
                              (first.dir.path() / "user_key").string()});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 4);
    for (const auto& e : experiments) {
        INFO(e.experiment.canonical << ": " << e.outcome.diagnosis);
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        CHECK(e.attempts == 1);
        CHECK(e.outcome.samples.size() == 1);
    }
    // Two at once: some experiment started before another one ended, on the other host.
    auto time_of = [&](const std::string& name) { return std::stod(read_file(dir.path() / name)); };
    int overlapping = 0;
    const std::vector<std::string> modes{"a", "b", "c", "d"};
    for (const auto& x : modes)
        for (const auto& y : modes)
            if (x < y && time_of("start-" + x) < time_of("end-" + y) &&
                time_of("start-" + y) < time_of("end-" + x))
                ++overlapping;
    CHECK(overlapping >= 1);
    // Both hosts took a connection, and each ran its login shell once (sshd logs every exec
    // channel, i.e. every login-shell start, as "Starting session: command"): the agent's.
    for (const auto* host : {&first, &second}) {
        const std::string log = read_file(host->dir.path() / "sshd.log");
        CHECK(log.find("Accepted publickey") != std::string::npos);
        int commands = 0;
        for (auto at = log.find("Starting session: command"); at != std::string::npos;
             at = log.find("Starting session: command", at + 1))
            ++commands;
        CHECK(commands == 1);
    }
}

TEST_CASE(
    "pool: sitecustomize delivery is proven on each host, a non-Python workload is a delivery failure") {
    TestSshd first;
    if (!first.available) return;
    TestSshd second;
    if (!second.available) return;
    TempDir dir;
    {
        std::ofstream keys(second.dir.path() / "authorized_keys", std::ios::app);
        keys << read_file(first.dir.path() / "user_key.pub");
    }
    auto known = dir.write("known_hosts", read_file(first.dir.path() / "known_hosts") +
                                              read_file(second.dir.path() / "known_hosts"));
    const auto seen = dir.path() / "seen";
    auto task = write_delivery_task(dir, seen);
    auto spec = dir.write(
        "s.yaml", "sweep: pool-delivery\nbaseline: none\ntarget:\n  hosts: [" + first.url() + ", " +
                      second.url() + "]\n  workdir: " + (dir.path() / "remote").string() +
                      "\n  env_delivery: sitecustomize\nworkload:\n  command: [/bin/sh, " + task.string() +
                      ", \"{mode}\"]\n  metrics:\n    tok_s: 'tok_s=([0-9.]+)'\naxes:\n"
                      "  NCCL_PROTO: [LL]\n  mode: [py, sh]\ntimeouts:\n" +
                      k_ssh_timeouts);
    const std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db, "--known-hosts", known.string(), "--identity",
                              (first.dir.path() / "user_key").string()},
                             {"NCCL_PROTO=Simple"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    check_delivery_sweep(db, seen);
}
