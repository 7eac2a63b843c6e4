// results log: one experiment's recorded lines, and the errors for an unknown experiment.
#include "results/store/experiment_log.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;

namespace {

LoadedSweep two_experiments() {
    LoadedSweep sweep;
    sweep.info.id = 7;
    StoredExperiment ok;
    ok.experiment.id = 1;
    ok.outcome.status = ExperimentStatus::ok;
    ok.outcome.exit_code = 0;
    StoredExperiment failed;
    failed.experiment.id = 2;
    failed.outcome.status = ExperimentStatus::failed;
    failed.outcome.failure_class = "graph_capture";
    failed.outcome.detected_after_s = 3.2477;
    failed.outcome.diagnosis =
        "graph_capture while capturing: torch.AcceleratorError: CUDA error: operation not permitted when "
        "stream is capturing\n"
        "  rule 'cuda_capture_not_permitted' (graph_capture) matched at 3.248 s\n"
        "--- before ---\n  Capture cuda graph begin.\n> Traceback (most recent call last):\n";
    failed.outcome.exit_signal = 15;
    sweep.experiments = {ok, failed};
    return sweep;
}

}  // namespace

TEST_CASE("results log text: status and class and the stored diagnosis verbatim and the exit") {
    const auto sweep = two_experiments();
    const auto text = experiment_log_text(sweep, sweep.experiments[1]);
    CHECK(text ==
          "sweep 7 experiment 2: failed (graph_capture), detected 3.248 s after start\n"
          "graph_capture while capturing: torch.AcceleratorError: CUDA error: operation not permitted when "
          "stream is capturing\n"
          "  rule 'cuda_capture_not_permitted' (graph_capture) matched at 3.248 s\n"
          "--- before ---\n  Capture cuda graph begin.\n> Traceback (most recent call last):\n"
          "exit: killed by signal 15\n");
    CHECK(experiment_log_text(sweep, sweep.experiments[0]) ==
          "sweep 7 experiment 1: ok\nno lines were kept: lines are recorded only around a failure\nexit: "
          "status 0\n");
}

TEST_CASE("results log: an unknown experiment is bad input naming the sweep and its ids") {
    const auto sweep = two_experiments();
    auto found = find_experiment(sweep, 2);
    REQUIRE(found);
    CHECK((*found)->experiment.id == 2);
    auto missing = find_experiment(sweep, 9);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message ==
          "sweep 7 has no experiment 9: its experiments are 1..2 (`ncclsweep results show 7` lists them)");
    CHECK(missing.error().kind == ErrorKind::bad_input);
}
