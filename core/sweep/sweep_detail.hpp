#pragma once
// Internal to the sweep loop: one experiment (all its attempts and repeats) on one target,
// shared by the dispatcher (core/sweep/sweep_dispatch.cpp) and core/sweep/sweep.cpp.
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "core/sweep/sweep.hpp"

namespace ncclsweep::inline sweep::detail {

/// How run_experiment ended.
enum class ExperimentEnd { recorded, interrupted };

/// What run_experiment did.
struct ExperimentRun {
    ExperimentEnd end = ExperimentEnd::recorded;
    ExperimentReport report;
    int runs = 0;  ///< workload runs started (repeats, retries included)
};

/// Which repeats run_experiment runs: the full product runs repeats [0, options.repeats) once;
/// a search's later round runs more of a point already recorded, adding to its samples.
struct Rounds {
    int first_repeat = 0;
    int repeats = 0;                           ///< 0: options.repeats
    const ExperimentReport* before = nullptr;  ///< the point's report so far (a later round)
};

/// Whether commands go to the target through Target::submit first.
enum class Batched { no, yes };

/// Where experiment `experiment`'s files live on the host.
[[nodiscard]] std::string experiment_dir(const SweepRunOptions& options, const Experiment& experiment);

/// Writes the experiment's sitecustomize.py and env file; returns its directory.
Result<std::string> deliver(Target& target, const Experiment& experiment, const SweepRunOptions& options);

/// The command of one repeat (the batch key set when `batched`).
[[nodiscard]] Command command_for(const std::vector<std::string>& argv, const Experiment& experiment,
                                  const std::string& dir, EnvDelivery delivery, int repeat, Batched batched,
                                  const std::vector<Assignment>& extra_env);

/// One run's value of a metric from all its matches: after the first `warmup`, their last,
/// median or mean (docs/spec.md "Metrics"); nullopt when the warm-up left none.
[[nodiscard]] std::optional<double> run_value(const std::vector<double>& matches,
                                              const MetricExtraction& extraction);

/// Adds repeat `repeat`'s samples (run_value of each metric the watcher saw), phase times, the
/// effective NCCL choice and warnings to `report`.
void fill_from_watcher(ExperimentReport& report, const Watcher& watcher, int repeat,
                       const WorkloadSpec& workload);

/// The batch key of one repeat of an experiment ("exp-ID/rep-R").
[[nodiscard]] std::string batch_key(int exp_id, int repeat);

/// Runs every attempt of `experiment` on `target` until it is recorded (index is 1-based).
/// `previous_groups` gets the process groups it started. Errors: infrastructure (host lost
/// for good, sink failed).
Result<ExperimentRun> run_experiment(Target& target, const Experiment& experiment, int index, int total,
                                     ResultSink& sink, SweepObserver& observer,
                                     const SweepRunOptions& options, const std::atomic<bool>& stop,
                                     std::vector<long>& previous_groups, Batched batched,
                                     const Rounds& rounds = {});

}  // namespace ncclsweep::inline sweep::detail
