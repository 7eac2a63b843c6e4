// End-to-end: `ncclsweep watch` and command workloads (servers that crash, hang, or serve a client).
// No test here reads a clock: a server that hangs sleeps far longer than any test may run, so a
// verdict that waited for it could not pass; what is checked is that it was killed (a signal)
// and why (the class, the timeout's kind).
#include <fcntl.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

TEST_CASE("watch: a server that prints a capture failure and then hangs is failed and killed") {
    auto r =
        run_ncclsweep({"watch", "--json", "--kill-grace", "0.5", "--", "sh", "-c",
                       "echo 'Capture cuda graph begin'; sleep 0.3; "
                       "echo 'host:1:1 [0] NCCL INFO Channel 00/02 : 0 1 2 3 4 5 6 7'; "
                       "echo 'Capture cuda graph failed: operation not permitted when stream is capturing'; "
                       "sleep 3600"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    auto verdict = nlohmann::json::parse(r.out);
    CHECK(verdict["verdict"] == "failed");
    CHECK(verdict["class"] == "graph_capture");
    // The hour-long sleep was killed on the verdict, not waited for.
    CHECK(verdict["exit_signal"].is_number());
    // Detected at the failure line (the rule that matched it), with its times measured, whatever
    // their size: the watcher's clock starts after the command did, so not even the 0.3 s sleep
    // before the line is a bound (a loaded machine measured 0.289 s).
    CHECK(verdict["rule"] == "sglang_capture_failed");
    CHECK(verdict["seconds_to_detection"].get<double>() > 0.0);
    CHECK(verdict["detection_latency_s"].get<double>() >= 0.0);
    // The NCCL line above the failure is kept as context.
    CHECK(verdict["diagnosis"].get<std::string>().find("NCCL INFO Channel 00/02") != std::string::npos);
}

TEST_CASE("watch: a clean tpverify run is ok with its metrics, exit 0") {
    auto r =
        run_ncclsweep({"watch", "--json", "--expect-result", "--", binary_path("engine/tpverify").string(),
                       "--backend", "sim", "--json", "--iters", "5"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto verdict = nlohmann::json::parse(r.out);
    CHECK(verdict["verdict"] == "ok");
    CHECK(verdict["metrics"]["tok_s"].get<double>() > 0);
}

TEST_CASE("watch: a stalled command ends by the stall timeout") {
    auto r = run_ncclsweep({"watch", "--json", "--stall-timeout", "1", "--kill-grace", "0.2", "--", "sh",
                            "-c", "echo loading; sleep 3600"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    auto verdict = nlohmann::json::parse(r.out);
    CHECK(verdict["verdict"] == "timed_out");
    CHECK(verdict["exit_signal"].is_number());
    // Not before the stall timeout: the silence is counted from the last line, which the watcher
    // read after its clock started.
    CHECK(verdict["seconds_to_detection"].get<double>() >= 1.0);
}

TEST_CASE("watch --log: a hand-written SGLang-shaped log with a capture failure is diagnosed") {
    auto r = run_ncclsweep(
        {"watch", "--log", source_path("tests/fixtures/logs/sglang_capture_failure.log").string()});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("graph_capture") != std::string::npos);
}

TEST_CASE("watch --log --follow: lines appended by another process are judged as they arrive") {
    TempDir dir;
    auto log = dir.write("server.log", "loading weights\n");
    // A writer that appends a capture failure once the watcher has the log open, then stays
    // alive until the test closes the pipe on its stdin: both are state, not durations. The
    // opening is seen by inotify, its watch added here before anything else can open the file,
    // so no open is missed and nothing polls.
    const std::string quoted = ncclsweep::shell_quote(log.string());
    const std::string writer = "echo 'Capture cuda graph begin' >> " + quoted +
                               "; echo 'Capture cuda graph failed: out of memory' >> " + quoted +
                               "; read -r _";
    const int opened = ::inotify_init1(IN_CLOEXEC);
    REQUIRE(opened >= 0);
    REQUIRE(::inotify_add_watch(opened, log.c_str(), IN_OPEN) >= 0);
    int hold[2];
    REQUIRE(::pipe2(hold, O_CLOEXEC) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::setpgid(0, 0);  // its own group, so that killing it takes its shell too
        char event[sizeof(inotify_event) + 4096];
        if (::read(opened, event, sizeof event) <= 0) _exit(126);  // blocks until the watcher opens the log
        ::dup2(hold[0], 0);
        execl("/bin/sh", "sh", "-c", writer.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    ::close(opened);
    ::setpgid(pid, pid);  // also here: whichever of the two runs first
    ::close(hold[0]);
    auto r = run_ncclsweep({"watch", "--json", "--log", log.string(), "--follow"});
    // The verdict came from the appended lines while the writer was still there, not from it ending.
    const bool writer_alive = waitpid(pid, nullptr, WNOHANG) == 0;
    ::close(hold[1]);     // the writer's read ends
    kill(-pid, SIGKILL);  // the whole group, should the watcher have failed before the writer wrote
    waitpid(pid, nullptr, 0);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(writer_alive);
    auto verdict = nlohmann::json::parse(r.out);
    CHECK(verdict["verdict"] == "failed");
    CHECK(verdict["class"] == "graph_capture");
}

TEST_CASE("watch: usage errors exit 2") {
    CHECK(run_ncclsweep({"watch"}).exit_code == 2);
    CHECK(run_ncclsweep({"watch", "--log", "/nonexistent/x.log"}).exit_code == 2);
}

TEST_CASE("run: a command workload with ready, a client and a metric regex (the SGLang shape)") {
    TempDir dir;
    auto server = dir.write("server.sh",
                            "echo \"NCCL_ALGO=$NCCL_ALGO\"\n"
                            "echo 'The server is fired up and ready to roll!'\n"
                            "sleep 3600\n");
    auto client = dir.write("client.sh", "echo \"Output token throughput (tok/s): $1\"\n");
    auto spec = dir.write("s.yaml",
                          "sweep: e2e-command\n"
                          "target: local\n"
                          "workload:\n"
                          "  command: [sh, " +
                              server.string() +
                              "]\n"
                              "  client: [sh, " +
                              client.string() +
                              ", \"{rate}\"]\n"
                              "  ready: 'fired up and ready to roll'\n"
                              "  metrics:\n"
                              "    tok_s: 'Output token throughput \\(tok/s\\): ([0-9.]+)'\n"
                              "env:\n"
                              "  NCCL_PROTO: LL\n"
                              "axes:\n"
                              "  NCCL_ALGO: [allreduce:ring, allreduce:tree]\n"
                              "  rate: ['41.5', '57.25']\n"
                              "timeouts:\n"
                              "  startup: 10\n"
                              "  total: 30\n");
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db, "--kill-grace", "0.5"});
    INFO(r.out << r.err);
    // ok, not timed out by `total: 30`: the servers were stopped after their client, not waited for.
    REQUIRE(r.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 6);  // 2 algorithms and NCCL's defaults, at 2 rates
    for (const auto& e : experiments) {
        INFO(e.outcome.diagnosis);
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        const std::string& rate = e.experiment.params.back().second;
        int found = 0;
        for (const auto& sample : e.outcome.samples)
            if (sample.metric == "tok_s") {
                ++found;
                CHECK(sample.value == Approx(std::stod(rate)));
            }
        CHECK(found == 1);
    }
}

TEST_CASE("run: a command workload that crashes in capture and hangs is failed fast and recorded") {
    TempDir dir;
    auto server = dir.write(
        "server.sh",
        "echo 'Capture cuda graph begin'\n"
        "echo 'torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing'\n"
        "sleep 3600\n");
    auto spec = dir.write("s.yaml", server_spec("e2e-crash", server));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db, "--kill-grace", "0.5"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 1);  // its only experiment failed: a negative verdict (README "Exit statuses")
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 1);
    CHECK(experiments[0].outcome.status == results::ExperimentStatus::failed);
    CHECK(experiments[0].outcome.failure_class == "graph_capture");
    CHECK(experiments[0].outcome.detected_after_s.has_value());
    // The hour-long sleep was killed on the verdict, not waited for.
    CHECK(experiments[0].outcome.exit_signal.has_value());
}

TEST_CASE("run: a server without a client stops after N matches, metrics aggregate, the first ranks") {
    TempDir dir;
    // Prints five samples of each metric, then idles like a server: only stop_after ends it.
    auto server = dir.write("server.sh",
                            "echo 'fired up'\n"
                            "for i in 1 2 3 4 5; do echo \"itl=$i\"; echo \"tok/s=${i}0\"; done\n"
                            "sleep 300\n");
    auto spec = dir.write("s.yaml",
                          "sweep: e2e-stop-after\n"
                          "target: local\n"
                          "workload:\n"
                          "  command: [sh, " +
                              server.string() +
                              "]\n"
                              "  ready: 'fired up'\n"
                              "  stop_after: 5 matches\n"
                              "  metrics:\n"
                              "    itl_ms: {regex: 'itl=([0-9.]+)', aggregate: median, warmup: 1}\n"
                              "    tok_s: {regex: 'tok/s=([0-9.]+)', aggregate: mean}\n"
                              "axes:\n"
                              "  NCCL_ALGO: [Ring]\n"
                              "timeouts:\n"
                              "  total: 60\n");
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db, "--kill-grace", "0.5"});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 2);  // Ring and NCCL's defaults
    for (const auto& e : experiments) {
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        std::map<std::string, double> value;
        for (const auto& sample : e.outcome.samples) value[sample.metric] = sample.value;
        CHECK(value["itl_ms"] == Approx(3.5));  // median of 2 3 4 5 (the first match is warm-up)
        CHECK(value["tok_s"] == Approx(30));    // mean of 10..50
    }
    // The summary ranks by the first declared metric, not by tok_s.
    const auto header = r.out.find("id  status");
    REQUIRE(header != std::string::npos);
    CHECK(r.out.substr(header, r.out.find('\n', header + 1) - header).find("itl_ms") != std::string::npos);
}
