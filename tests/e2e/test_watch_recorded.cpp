// End-to-end: recorded real failure output (tests/fixtures/recorded/) replayed with its original
// timing through the real `ncclsweep watch`, tpverify's bare-Tree crash with and without
// NCCL_DEBUG, and `results log`.
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// `ncclsweep watch --json` on a recording replayed with its timing.
nlohmann::json watch_recording(const std::string& name, CommandResult& r) {
    r = run_ncclsweep({"watch", "--json", "--kill-grace", "0.5", "--",
                       binary_path("tests/replay_recording").string(), "--from-first-line",
                       source_path("tests/fixtures/recorded/" + name + ".rec").string()});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 1);
    return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("watch: recorded torch capture failure replayed with its timing is graph_capture while capturing") {
    CommandResult r;
    auto verdict = watch_recording("torch_capture_host_sync", r);
    INFO(r.out);
    CHECK(verdict["verdict"] == "failed");
    CHECK(verdict["class"] == "graph_capture");
    CHECK(verdict["phase"] == "capturing");
    CHECK(verdict["cause"] ==
          "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing");
    CHECK(verdict["rule"] == "cuda_capture_not_permitted");
    // The settle window was measured (how long it takes is bench/'s business, not a test's).
    REQUIRE(verdict["settle_latency_s"].is_number());
    CHECK(verdict["settle_latency_s"].get<double>() >= 0.0);
    // The chained exception printed after it was read too, not thrown away with the kill.
    CHECK(verdict["diagnosis"].get<std::string>().find("Traceback (most recent call last):") !=
          std::string::npos);
}

TEST_CASE("watch: recorded torch OOM and illegal memory access replayed get oom and cuda with their lines") {
    CommandResult r;
    auto oom = watch_recording("torch_oom", r);
    CHECK(oom["class"] == "oom");
    CHECK(oom["cause"].get<std::string>().starts_with("torch.OutOfMemoryError: CUDA out of memory."));
    auto illegal = watch_recording("torch_illegal_access", r);
    CHECK(illegal["class"] == "cuda");
    CHECK(illegal["phase"] == "initializing");
    CHECK(illegal["cause"] == "torch.AcceleratorError: CUDA error: an illegal memory access was encountered");
}

TEST_CASE(
    "watch: recorded device-side assert replayed with its timing is cuda with the traceback's exception line "
    "as "
    "cause") {
    CommandResult r;
    auto verdict = watch_recording("torch_device_assert", r);
    CHECK(verdict["verdict"] == "failed");
    CHECK(verdict["class"] == "cuda");
    CHECK(verdict["phase"] == "initializing");
    CHECK(verdict["cause"] == "torch.AcceleratorError: CUDA error: device-side assert triggered");
    CHECK(verdict["rule"] == "cuda_error");
    const auto diagnosis = verdict["diagnosis"].get<std::string>();
    CHECK(
        diagnosis.find("> /pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:111: operator(): block: [0,0,0], "
                       "thread: [0,0,0] Assertion") != std::string::npos);  // the fatal line
    CHECK(diagnosis.find("Traceback (most recent call last):") != std::string::npos);
    REQUIRE(verdict["settle_latency_s"].is_number());
    CHECK(verdict["settle_latency_s"].get<double>() >= 0.0);
    // The echo (watch without --json) still shows every line the program wrote, in order.
    auto echoed = run_ncclsweep({"watch", "--kill-grace", "0.5", "--",
                                 binary_path("tests/replay_recording").string(), "--from-first-line",
                                 source_path("tests/fixtures/recorded/torch_device_assert.rec").string()});
    INFO(echoed.err);
    const auto assert_at = echoed.err.find("thread: [2,0,0] Assertion");
    const auto exception_at =
        echoed.err.find("\ntorch.AcceleratorError: CUDA error: device-side assert triggered\n");
    CHECK(assert_at != std::string::npos);
    CHECK(exception_at != std::string::npos);
    CHECK(assert_at < exception_at);
}

TEST_CASE("watch: a traceback still in the pipe when the first fatal line is read is not lost") {
    auto r = run_ncclsweep(
        {"watch", "--json", "--kill-grace", "0.5", "--", "sh", "-c",
         "printf 'Traceback (most recent call last):\\n  File \"x.py\", line 1, in <module>\\n"
         "RuntimeError: CUDA error: an illegal memory access was encountered\\n' >&2; sleep 3600"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    auto verdict = nlohmann::json::parse(r.out);
    CHECK(verdict["class"] == "cuda");
    CHECK(verdict["cause"] == "RuntimeError: CUDA error: an illegal memory access was encountered");
    CHECK(verdict["settle_latency_s"].is_number());
    CHECK(verdict["exit_signal"] == SIGTERM);  // the hour-long sleep was killed after the window
}

TEST_CASE("watch: tpverify's bare-Tree crash has the same class with NCCL_DEBUG=WARN set or unset") {
    std::vector<std::string> causes;
    for (bool warn : {false, true}) {
        INFO("NCCL_DEBUG=WARN: " << warn);
        std::vector<std::string> env{"NCCL_ALGO=Tree"};
        if (warn) env.push_back("NCCL_DEBUG=WARN");
        auto r = run_ncclsweep(
            {"watch", "--json", "--expect-result", "--", binary_path("engine/tpverify").string(), "--backend",
             "sim", "--tp", "8", "--json", "--iters", "5", "--no-warmup-before-capture", "--server", "none"},
            env);
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 1);
        auto verdict = nlohmann::json::parse(r.out);
        CHECK(verdict["class"] == "graph_capture");
        CHECK(verdict["phase"] == "capturing");
        causes.push_back(verdict["cause"].get<std::string>());
    }
    CHECK(causes[0].find("tpverify: capture:") == 0);
    CHECK(causes[1].find("NCCL WARN Error : no algorithm/protocol available") !=
          std::string::npos);  // a better cause
}

TEST_CASE(
    "results log: an experiment's cause and context lines and exit and the cause in run and show and JUnit "
    "and report") {
    TempDir dir;
    auto server = dir.write(
        "server.sh",
        "echo 'loading weights'\n"
        "echo 'Capture cuda graph begin'\n"
        "printf 'Traceback (most recent call last):\\n  File \"runner.py\", line 9, in capture\\n"
        "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\\n' >&2\n"
        "sleep 300\n");
    auto spec = dir.write("s.yaml", server_spec("e2e-log", server));
    std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db, "--kill-grace", "0.5"});
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 1);  // its only experiment failed: a negative verdict
    // run's summary shows the cause, not the rule's words.
    CHECK((run.out + run.err)
              .find("graph_capture while capturing: torch.AcceleratorError: CUDA error: operation not "
                    "permitted") != std::string::npos);

    auto log = run_ncclsweep({"results", "log", "latest", "1", "--db", db});
    INFO(log.out << log.err);
    REQUIRE(log.exit_code == 0);
    CHECK(log.out.find("experiment 1: failed (graph_capture)") != std::string::npos);
    CHECK(log.out.find(
              "graph_capture while capturing: torch.AcceleratorError: CUDA error: operation not permitted") !=
          std::string::npos);
    CHECK(log.out.find("  Capture cuda graph begin") != std::string::npos);            // a line before
    CHECK(log.out.find("> Traceback (most recent call last):") != std::string::npos);  // the trigger
    CHECK(log.out.find("exit: killed by signal 15") != std::string::npos);

    auto show = run_ncclsweep({"results", "show", "latest", "--db", db});
    CHECK(show.out.find("operation not permitted when stream is capturing") != std::string::npos);

    const std::string cause =
        "graph_capture while capturing: torch.AcceleratorError: CUDA error: operation not permitted";
    auto junit = run_ncclsweep({"export", "latest", "--format", "junit", "--db", db});
    INFO(junit.err);
    CHECK(junit.out.find("<failure type=\"graph_capture\" message=\"" + cause) != std::string::npos);
    auto report = run_ncclsweep({"report", "latest", "-o", "-", "--db", db});
    INFO(report.err);
    CHECK(report.out.find(cause) != std::string::npos);

    auto unknown = run_ncclsweep({"results", "log", "latest", "7", "--db", db});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.err.find("has no experiment 7") != std::string::npos);
}
