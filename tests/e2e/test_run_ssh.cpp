// End-to-end: `ncclsweep run` against a real OpenSSH sshd on 127.0.0.1 (scripts/test-sshd.sh),
// with host key checking on, the simulated engine on the "remote" host, and a dying server.
#include <chrono>
#include <thread>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

TEST_CASE("run over ssh: experiments run on the host and are recorded, unknown host key refused") {
    TestSshd sshd;
    if (!sshd.available) return;
    TempDir dir;
    std::string spec_text = over_ssh(sim_spec("e2e-ssh", "  NCCL_PROTO: [LL, Simple]\n", 1, k_ssh_timeouts),
                                     sshd, dir.path() / "remote");
    auto spec = dir.write("s.yaml", spec_text);
    std::string db = (dir.path() / "r.db").string();

    // An empty known_hosts: the host is unknown and must be refused, nothing recorded.
    auto empty_known = dir.write("empty_known_hosts", "");
    auto flags = sshd.flags();
    flags[1] = empty_known.string();
    std::vector<std::string> args{"run", spec.string(), "--db", db};
    args.insert(args.end(), flags.begin(), flags.end());
    auto refused = run_ncclsweep(args);
    CHECK(refused.exit_code == 3);
    CHECK(refused.err.find("known_hosts") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));

    args = {"run", spec.string(), "--db", db};
    auto good = sshd.flags();
    args.insert(args.end(), good.begin(), good.end());
    auto r = run_ncclsweep(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 2);
    for (const auto& e : experiments) CHECK(e.outcome.status == results::ExperimentStatus::ok);
    // The environment files were written on the host through SFTP.
    CHECK(std::filesystem::exists(sweep_dir(dir.path() / "remote") / "exp-1" / "env"));
    CHECK(std::filesystem::exists(sweep_dir(dir.path() / "remote") / "exp-2" / "sitecustomize.py"));
}

TEST_CASE(
    "run over ssh: sitecustomize delivery is proven on the host, a non-Python workload is a delivery "
    "failure") {
    TestSshd sshd;
    if (!sshd.available) return;
    TempDir dir;
    const auto seen = dir.path() / "seen";
    auto task = write_delivery_task(dir, seen);
    auto spec = dir.write("s.yaml", "sweep: ssh-delivery\nbaseline: none\ntarget:\n  url: " + sshd.url() +
                                        "\n  workdir: " + (dir.path() / "remote").string() +
                                        "\n  env_delivery: sitecustomize\nworkload:\n  command: [/bin/sh, " +
                                        task.string() +
                                        ", \"{mode}\"]\n  metrics:\n    tok_s: 'tok_s=([0-9.]+)'\naxes:\n"
                                        "  NCCL_PROTO: [LL]\n  mode: [py, sh]\ntimeouts:\n" +
                                        k_ssh_timeouts);
    const std::string db = (dir.path() / "r.db").string();
    std::vector<std::string> args{"run", spec.string(), "--db", db};
    auto flags = sshd.flags();
    args.insert(args.end(), flags.begin(), flags.end());
    // The login environment exports NCCL_PROTO too: the swept value must still win.
    auto r = run_ncclsweep(args, {"NCCL_PROTO=Simple"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    check_delivery_sweep(db, seen);
    // The evidence was written on the host, next to the experiment's sitecustomize.py.
    CHECK(read_file(sweep_dir(dir.path() / "remote") / "exp-1" / "delivered-0")
              .rfind("ncclsweep-delivered pgid=", 0) == 0);
}

TEST_CASE(
    "run over ssh: sshd killed mid-sweep is an infrastructure failure, --resume finishes exactly once") {
    TestSshd sshd;
    if (!sshd.available) return;
    TempDir dir;
    std::string spec_text =
        over_ssh(sim_spec("e2e-ssh-loss",
                          "  NCCL_PROTO: [LL, Simple]\n  tokens: [1, 2]\n  inject: [\"hang@warmup:2\"]\n", 1,
                          k_ssh_timeouts),
                 sshd, dir.path() / "remote");
    auto spec = dir.write("s.yaml", spec_text);
    std::string db = (dir.path() / "r.db").string();
    std::vector<std::string> args{"run", spec.string(), "--db", db};
    auto flags = sshd.flags();
    args.insert(args.end(), flags.begin(), flags.end());

    // Kill the server (and its connections) while the sweep runs, once the first experiment's
    // workload is running on the host (waiting for its process, not for the clock: on a loaded
    // machine the preflight alone can take seconds). Its 2 s hang keeps it alive meanwhile.
    std::thread killer([&] {
        const pid_t workload = TestSshd::wait_for_process_in(
            sweep_dir(dir.path() / "remote", 1, std::chrono::seconds(120)) / "exp-1",
            std::chrono::seconds(120));
        CHECK(workload != 0);
        sshd.stop();
    });
    auto r = run_ncclsweep(args);
    killer.join();
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("--resume") != std::string::npos);
    auto partial = latest_experiments(db);
    REQUIRE(partial.size() == 4);
    for (const auto& e : partial)  // a lost connection is never a crash of the configuration
        CHECK(e.outcome.status != results::ExperimentStatus::failed);

    REQUIRE(sshd.start(std::to_string(sshd.port)));
    args.push_back("--resume");
    auto resumed = run_ncclsweep(args);
    INFO(resumed.err);
    REQUIRE(resumed.exit_code == 0);
    auto all = latest_experiments(db);
    REQUIRE(all.size() == 4);
    for (const auto& e : all) {
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        int tok_s = 0;
        for (const auto& s : e.outcome.samples) tok_s += s.metric == "tok_s";
        CHECK(tok_s == 1);
    }
}
