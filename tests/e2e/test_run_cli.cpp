// End-to-end: `ncclsweep run` on the local target with the simulated engine.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <thread>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

TEST_CASE("run: a local sweep on the simulated engine records every experiment with samples") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("e2e-basic",
                                             "  NCCL_PROTO: [LL, Simple]\n"
                                             "  fusion: [\"off\", \"on\"]\n",
                                             2));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("results in " + db) != std::string::npos);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 4);
    for (const auto& e : experiments) {
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        int tok_s = 0;
        for (const auto& s : e.outcome.samples)
            if (s.metric == "tok_s") {
                ++tok_s;
                CHECK(s.value > 0);
            }
        CHECK(tok_s == 2);  // one per repeat
    }
    // On pcie-gen5 (RTX PRO 6000s with peer access) the fused kernel really runs: one kernel
    // instead of an all-reduce plus a norm, so every fused point must beat every unfused one
    // of the same protocol.
    for (const std::string proto : {"LL", "Simple"}) {
        const results::StoredExperiment* fused = nullptr;
        const results::StoredExperiment* unfused = nullptr;
        for (const auto& e : experiments) {
            bool has_proto = false;
            std::string fusion;
            for (const auto& [n, v] : e.experiment.params) {
                has_proto |= n == "NCCL_PROTO" && v == proto;
                if (n == "fusion") fusion = v;
            }
            for (const auto& [n, v] : e.experiment.env) has_proto |= n == "NCCL_PROTO" && v == proto;
            if (has_proto) (fusion == "on" ? fused : unfused) = &e;
        }
        REQUIRE(fused);
        REQUIRE(unfused);
        auto slowest = [](const results::StoredExperiment& e) {
            double worst = 1e300;
            for (const auto& s : e.outcome.samples)
                if (s.metric == "tok_s") worst = std::min(worst, s.value);
            return worst;
        };
        auto fastest = [](const results::StoredExperiment& e) {
            double best = 0;
            for (const auto& s : e.outcome.samples)
                if (s.metric == "tok_s") best = std::max(best, s.value);
            return best;
        };
        INFO(proto);
        CHECK(slowest(*fused) > fastest(*unfused));
    }
}

TEST_CASE(
    "run: each repeat is told its index, so a seeded sim varies between repeats and reproduces on a rerun") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("e2e-repeats", "  seed: [9]\n", 3));
    auto samples_of = [&](const std::string& db) {
        auto r = run_ncclsweep({"run", spec.string(), "--db", db});
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        auto experiments = latest_experiments(db);
        REQUIRE(experiments.size() == 1);
        std::vector<double> values;
        for (const auto& s : experiments[0].outcome.samples)
            if (s.metric == "tok_s") values.push_back(s.value);
        REQUIRE(values.size() == 3);
        return values;
    };
    const auto first = samples_of((dir.path() / "a.db").string());
    CHECK(first[0] != first[1]);
    CHECK(first[1] != first[2]);
    CHECK(samples_of((dir.path() / "b.db").string()) == first);

    // Any workload sees NCCLSWEEP_REPEAT: 0, 1, 2 in order.
    const auto log = dir.path() / "repeats.txt";
    auto shell_spec =
        dir.write("sh.yaml",
                  "sweep: e2e-repeat-env\ntarget: local\nworkload:\n  command: \"echo $NCCLSWEEP_REPEAT >> " +
                      log.string() + "\"\naxes:\n  x: [1]\nrepeats: 3\n");
    auto r = run_ncclsweep({"run", shell_spec.string(), "--db", (dir.path() / "c.db").string()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(read_file(log) == "0\n1\n2\n");
}

TEST_CASE("run: injected faults are detected, classified and recorded, a hang ends by stall timeout") {
    TempDir dir;
    auto spec =
        dir.write("s.yaml", sim_spec("e2e-faults",
                                     "  inject: [\"false\", capture-fail, nccl-error, cuda-oom, segv, "
                                     "\"hang@replay\", exit]\n",
                                     1, "  stall: 5\n  total: 60\n"));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db, "--kill-grace", "0.5"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);  // failed experiments are results, not errors
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 7);
    std::map<std::string, std::pair<results::ExperimentStatus, std::string>> by_inject;
    for (const auto& e : experiments)
        by_inject[e.experiment.params.at(0).second] = {e.outcome.status, e.outcome.failure_class};
    CHECK(by_inject["false"].first == results::ExperimentStatus::ok);
    CHECK(by_inject["capture-fail"] ==
          std::pair{results::ExperimentStatus::failed, std::string("graph_capture")});
    CHECK(by_inject["nccl-error"] == std::pair{results::ExperimentStatus::failed, std::string("nccl")});
    CHECK(by_inject["cuda-oom"] == std::pair{results::ExperimentStatus::failed, std::string("oom")});
    CHECK(by_inject["segv"].first == results::ExperimentStatus::failed);
    CHECK(by_inject["hang@replay"].first == results::ExperimentStatus::timed_out);
    CHECK(by_inject["exit"].first == results::ExperimentStatus::failed);
    for (const auto& e : experiments) {
        if (e.outcome.status != results::ExperimentStatus::ok) CHECK_FALSE(e.outcome.diagnosis.empty());
        // The hang ended by the stall timeout (5 s), not by the total one (60 s).
        if (e.outcome.status == results::ExperimentStatus::timed_out)
            CHECK(e.outcome.diagnosis.find("stall timeout") != std::string::npos);
    }
}

TEST_CASE("run: bare NCCL_ALGO=Tree crashes in capture like NCCL and is recorded as such") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("e2e-tree", "  NCCL_ALGO: [allreduce:tree, Tree]\n"));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("allreduce:tree") != std::string::npos);  // the planner's suggestion
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 2);
    CHECK(experiments[0].outcome.status == results::ExperimentStatus::ok);
    CHECK(experiments[1].outcome.status == results::ExperimentStatus::failed);
    CHECK(experiments[1].outcome.diagnosis.find("AllGather") != std::string::npos);
}

TEST_CASE("run: a bad spec exits 2 and records nothing") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("e2e-bad", "  NCCL_NTHREADS: [100]\n"));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("s.yaml:") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));
}

TEST_CASE("run: --json prints one object per experiment and nothing decorative") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("e2e-json", "  NCCL_PROTO: [LL, Simple]\n"));
    auto r = run_ncclsweep({"run", spec.string(), "--db", (dir.path() / "r.db").string(), "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    int lines = 0;
    std::size_t start = 0;
    while (start < r.out.size()) {
        auto end = r.out.find('\n', start);
        std::string line = r.out.substr(start, end - start);
        CHECK(line.rfind("{\"event\":\"experiment\"", 0) == 0);
        ++lines;
        start = end + 1;
    }
    CHECK(lines == 2);
}

TEST_CASE("run: SIGINT stops cleanly, and --resume finishes with each experiment recorded once") {
    TempDir dir;
    // Experiment 1 ends at once; the others wait for a gate file the test creates only after the
    // interrupt, so exactly one experiment has finished when SIGINT comes, however loaded the
    // machine is (no sleep decides it).
    const auto gate = dir.path() / "gate";
    auto server = dir.write("server.sh", "[ \"$1\" = 1 ] || while [ ! -e '" + gate.string() +
                                             "' ]; do sleep 0.05; done\necho tok_s=$((100 + $1))\n");
    auto spec = dir.write("s.yaml",
                          "sweep: e2e-resume\ntarget: local\nworkload:\n  command: [sh, " + server.string() +
                              ", \"{n}\"]\n  metrics:\n    tok_s: 'tok_s=([0-9]+)'\n"
                              "axes:\n  n: [1, 2, 3, 4, 5, 6]\ntimeouts:\n  stall: 600\n  total: 600\n");
    std::string db = (dir.path() / "r.db").string();
    std::vector<std::string> argv{binary_path("cli/ncclsweep").string(), "run", spec.string(), "--db", db};
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int devnull = ::open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        std::vector<char*> cargv;
        for (auto& a : argv) cargv.push_back(a.data());
        cargv.push_back(nullptr);
        execv(cargv[0], cargv.data());
        _exit(127);
    }
    // Interrupt once at least one experiment is recorded (polling the database, not the clock,
    // so a loaded machine does not change what is tested).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    for (;;) {
        int done = 0;
        if (std::filesystem::exists(db))
            for (const auto& e : latest_experiments(db))
                done += results::is_finished(e.outcome.status) ? 1 : 0;
        if (done >= 1 || std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // A second runner of the same sweep is refused while this one lives: it would run the
    // unfinished experiments a second time.
    auto second = run_ncclsweep({"run", spec.string(), "--db", db, "--resume"});
    INFO(second.err);
    CHECK(second.exit_code == 3);
    CHECK(second.err.find("still being run by pid " + std::to_string(pid)) != std::string::npos);
    auto listed = run_ncclsweep({"results", "list", "--db", db});
    CHECK(listed.out.find("runner gone") == std::string::npos);
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 3);
    auto partial = latest_experiments(db);
    REQUIRE(partial.size() == 6);
    int finished = 0;
    for (const auto& e : partial) finished += results::is_finished(e.outcome.status) ? 1 : 0;
    CHECK(finished == 1);  // the one that could finish; the interrupted one is not recorded

    dir.write("gate", "open\n");
    auto r = run_ncclsweep({"run", spec.string(), "--db", db, "--resume"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    // The resumed run's summary covers the whole sweep, the experiments of the first run too.
    INFO(r.out);
    for (int id = 1; id <= 6; ++id)
        CHECK(std::regex_search(r.out, std::regex("(^|\\n) *" + std::to_string(id) + "  ok  ")));
    auto all = latest_experiments(db);
    REQUIRE(all.size() == 6);
    for (const auto& e : all) {
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        int tok_s = 0;
        for (const auto& s : e.outcome.samples) tok_s += s.metric == "tok_s";
        CHECK(tok_s == 1);
    }
}
