#pragma once
// The sweep loop: for each experiment x repeat, deliver its environment, start it on the
// target, supervise it under the watcher, and hand the outcome to a ResultSink the moment the
// experiment ends. Depends only on interfaces (Target, ResultSink, SweepObserver).
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/experiment.hpp"
#include "core/result.hpp"
#include "core/search/search.hpp"
#include "core/spec/spec.hpp"
#include "core/target.hpp"
#include "core/watch/rule_catalog.hpp"
#include "core/watch/watcher.hpp"

namespace ncclsweep::inline sweep {

/// How one experiment ended (all repeats together), or why the search left it out: `pruned`
/// (never ran: a value of it kept failing) and `dropped` (ran, and is behind the leader).
enum class RunStatus { ok, failed, timed_out, infra_error, pruned, dropped };

/// Text of a RunStatus ("ok", "failed", "timed_out", "infra_error", "pruned", "dropped").
[[nodiscard]] std::string_view to_string(RunStatus status);

/// One measured value.
struct SampleValue {
    int repeat = 0;
    std::string metric;
    double value = 0;
};

/// Everything recorded about one experiment.
struct ExperimentReport {
    int exp_id = 0;
    RunStatus status = RunStatus::ok;
    std::string failure_class;               ///< "" when ok
    std::string diagnosis;                   ///< matching line + context, or last lines; pruned/dropped: why
    std::optional<double> detected_after_s;  ///< start -> fatal line / timeout
    std::string effective_nccl;              ///< what NCCL reported it used
    /// What the engine's collective times rest on, from tpverify's result event: "calibrated",
    /// "relative" or "modelled" (the weakest over the repeats; "" when the engine does not say).
    std::string collective_times;
    std::optional<double> init_s, capture_s, ready_s, measure_s, total_s;
    std::optional<int> exit_code, exit_signal;
    std::vector<SampleValue> samples;
    std::vector<std::pair<std::string, std::string>> warnings;  ///< rule, line
    int attempts = 1;
    /// The median of metric `name` over the repeats (empty if absent).
    [[nodiscard]] std::optional<double> median(const std::string& name) const;
};

/// The weaker of two `collective_times` labels: calibrated < relative < modelled < anything else;
/// "" counts as no label.
[[nodiscard]] std::string weaker_collective_times(const std::string& a, const std::string& b);

/// Receives outcomes as they happen; an error stops the sweep (infrastructure).
class ResultSink {
public:
    virtual ~ResultSink() = default;
    /// Experiment `exp_id` is starting (attempt 1, 2, ... after a lost connection).
    virtual Result<void> experiment_started(int exp_id, int attempt) = 0;
    /// Experiment finished (committed before the next starts).
    virtual Result<void> experiment_finished(const ExperimentReport& report) = 0;
    /// A batch target (Slurm) gave experiment `exp_id` its scheduler tasks, one per repeat,
    /// space-separated ("4242_0 4242_1"), so a resume can find them again.
    virtual Result<void> experiment_scheduled(int /*exp_id*/, const std::string& /*tasks*/) {
        return success();
    }
};

/// Progress for people or machines (core/sweep/progress.hpp implements it: ProgressPrinter).
class SweepObserver {
public:
    virtual ~SweepObserver() = default;
    /// `index` is 1-based among the experiments of this run; `total` their number.
    virtual void started(const Experiment& experiment, int index, int total, int repeat) = 0;
    /// The experiment has ended and been recorded.
    virtual void finished(const Experiment& experiment, const ExperimentReport& report, int index,
                          int total) = 0;
    /// A note for people (retry after a lost connection, ...).
    virtual void notice(const std::string& message) = 0;
};

/// Settings of a sweep run.
struct SweepRunOptions {
    std::string sweep_name;
    std::string workdir;  ///< per-sweep directory on the host (Target::prepare_workdir)
    EnvDelivery delivery = EnvDelivery::both;
    int repeats = 1;
    WatcherOptions watcher;  ///< timeouts, success rule
    std::shared_ptr<const RuleCatalog> catalog;
    WorkloadSpec workload;  ///< for the optional client command
    std::chrono::milliseconds kill_grace{2000};
    int max_attempts = 3;  ///< per experiment, on lost connections
    /// Variables every experiment's process also gets, unless its own environment names them
    /// (NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=TUNING, so NCCL says what it chose).
    std::vector<Assignment> extra_env;
    /// Checked before each experiment with the process groups the previous one started (e.g.
    /// none of them still holds a GPU); an error stops the sweep as an infrastructure failure.
    std::function<Result<void>(const std::vector<long>& previous_groups)> before_experiment;
    /// What runs next (docs/search.md); the default runs every experiment with `repeats`, in order.
    /// Its `repeats` is overwritten by `repeats` above when no search is configured.
    std::optional<search::Settings> search;
    /// Scheduler tasks an earlier run of this sweep gave its experiments (a resume), by
    /// experiment id, as ResultSink::experiment_scheduled wrote them.
    std::map<int, std::string> previous_tasks;
    /// The time the watcher and the recorded durations read; nullptr = the steady clock. Unit
    /// tests hand in a tests/support/manual_clock.hpp clock shared with their FakeTarget.
    const Clock* clock = nullptr;
};

/// What a run of the loop did.
struct SweepRunSummary {
    int ran = 0, ok = 0, failed = 0;
    int pruned = 0, dropped = 0;    ///< points the search left out (this run)
    int dropped_after_running = 0;  ///< of the dropped: they ran in this run (ran = ok + failed + these)
    int collapsed = 0;              ///< of the dropped: an axis of theirs showed no effect (whole search)
    int settled = 0;                ///< ok points within the threshold of the leader (whole search)
    double noise = 0;               ///< the race's estimate of one run's relative noise (0 = none)
    int runs = 0;                   ///< workload runs started (this run)
    int rounds = 1;                 ///< the search's last round
    bool interrupted = false;
    bool budget_spent = false;  ///< the search's budget ended the sweep (resumable with a larger one)
    std::string search_end;     ///< how the search ended ("" for the full product)
};

/// Runs what `search` decides among `experiments` (the sweep's points, id order), one point at a
/// time on slot 0 (each decision waits for the result before it; on a batch target each run is
/// a task of its own): each run step
/// dispatches some repeats of one point (a later round's repeats are added to the point's
/// earlier samples and the point is recorded again, with all of them), each skip step records
/// a point as pruned or dropped with the reason, and a stop step ends the loop. `history` holds
/// the reports a resumed sweep recorded before (they are restored into the search, not rerun).
/// Errors and interrupts as run_experiments.
Result<SweepRunSummary> run_search(Target& target, const std::vector<Experiment>& experiments,
                                   const std::vector<ExperimentReport>& history, ResultSink& sink,
                                   SweepObserver& observer, const SweepRunOptions& options,
                                   const std::atomic<bool>& stop);

/// The search's view of a recorded report: ok or not, whether its class says anything about the
/// setting, the samples of `metric`, and the runs it took (highest repeat + 1).
[[nodiscard]] search::Observation observation_of(const ExperimentReport& report, const std::string& metric);

/// Runs `experiments` in order, up to target.slots() at once (each on its slot's target; the
/// sink and observer are called from one thread at a time). A batch target first gets every
/// experiment x repeat in one Target::submit. Returns an infrastructure Error when a host stays
/// unreachable or the sink fails (everything finished before is recorded); `interrupted` when
/// `stop` was raised (running experiments are killed and not recorded; Target::cancel_all ends
/// what a batch target still has queued).
Result<SweepRunSummary> run_experiments(Target& target, const std::vector<Experiment>& experiments,
                                        ResultSink& sink, SweepObserver& observer,
                                        const SweepRunOptions& options, const std::atomic<bool>& stop);

/// The file names written into each experiment's directory.
inline constexpr const char* k_sitecustomize_file = "sitecustomize.py";
inline constexpr const char* k_env_file = "env";

}  // namespace ncclsweep::inline sweep
