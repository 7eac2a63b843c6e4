#pragma once
// One `ncclsweep run`: plan (or re-plan for --resume), record the sweep, run what is not
// finished, and close the sweep with the right state. The store and the target are interfaces
// (results/ and remote/ implement them), so this is tested with fakes.
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.hpp"
#include "core/plan/plan_fingerprint.hpp"
#include "core/result.hpp"
#include "core/sweep/sweep.hpp"

namespace ncclsweep::inline sweep {

/// How a sweep ended (stored as its state).
enum class SweepEnd { done, interrupted, failed };

/// What a new sweep is.
struct NewSweep {
    std::string name, tag, spec_path, spec_text, target, preflight_json, tool_version;
    int repeats = 1;
    PlanFingerprint fingerprint;            ///< what it runs besides its points (checked by a resume)
    std::vector<MetricDefinition> metrics;  ///< declared by the spec or the engine (unit, better)
    std::string backend;                    ///< engine backend producing the numbers ("sim", "cuda", "")
    /// Random id (32 hex digits) naming its work directory, unique across databases, users and
    /// hosts; run_sweep draws one when empty.
    std::string uuid{};
    /// NCCL_*/CUDA_*/TORCH_NCCL_* variables the workload inherits that the spec does not set
    /// (inherited_environment), recorded with the sweep; a resume refuses a different set.
    std::vector<Assignment> inherited_env{};
};

/// A stored sweep's plan, as a resume reads it (reading writes nothing).
struct StoredPlan {
    std::vector<Experiment> experiments;  ///< id order
    PlanFingerprint fingerprint;          ///< empty for sweeps recorded before fingerprints
    std::string uuid;                     ///< the sweep's random id ("" = the store has none)
    /// The inherited variables recorded with it; nullopt for sweeps recorded before they were.
    std::optional<std::vector<Assignment>> inherited_env;
};

/// A sweep being written: the sink plus bookkeeping (results/ implements it over SQLite).
class SweepStore : public ResultSink {
public:
    /// Records a new sweep (state running) with its planned experiments; returns its id.
    virtual Result<std::int64_t> create(const NewSweep& sweep,
                                        const std::vector<Experiment>& experiments) = 0;
    /// Reads sweep `id`'s plan for a resume without writing anything.
    virtual Result<StoredPlan> load_plan(std::int64_t id) = 0;
    /// Reopens sweep `id` (state running, one more resume, this process its runner) once its
    /// plan was found the same; refused (infrastructure) while another live runner has it.
    virtual Result<void> reopen(std::int64_t id) = 0;
    /// Ids of experiments of the current sweep that must not run again.
    virtual Result<std::vector<int>> finished_ids() = 0;
    /// The recorded reports (status, class, samples, total_s; pruned/dropped with their reason)
    /// of the current sweep's finished experiments: a resumed search starts from them.
    virtual Result<std::vector<ExperimentReport>> finished_reports() = 0;
    /// A sweep-level note (plan warnings, preflight notes).
    virtual Result<void> note(const std::string& code, const std::string& message) = 0;
    /// Ends the current sweep.
    virtual Result<void> finish(SweepEnd end, const std::string& reason) = 0;
    /// Scheduler tasks recorded for the current sweep's experiments (experiment_scheduled), by
    /// experiment id; empty when none were.
    virtual Result<std::map<int, std::string>> scheduled_tasks() { return std::map<int, std::string>{}; }
};

/// What to run.
struct SweepRequest {
    NewSweep sweep;
    std::vector<Experiment> experiments;                             ///< the plan, in order
    std::vector<std::pair<std::string, std::string>> plan_warnings;  ///< code, message (with ids)
    std::optional<std::int64_t> resume_id;                           ///< --resume: continue this sweep
    std::string database;  ///< where it is recorded (named to a second runner of its work directory)
};

/// What happened.
struct SweepOutcome {
    std::int64_t sweep_id = 0;
    SweepRunSummary summary;
    int skipped_finished = 0;  ///< experiments a resume did not run again
    int total = 0;             ///< experiments in the sweep
};

/// A new random sweep id: 32 lower-case hex digits (128 bits from the OS's random source).
[[nodiscard]] std::string new_sweep_uuid();

/// The name of a sweep's work directory under the target's root: "sweep-ID-UUID" (the id for
/// people, the uuid so that sweeps of other databases, users or hosts never share it).
[[nodiscard]] std::string workdir_name(std::int64_t sweep_id, const std::string& uuid);

/// Bad input when `dir` cannot go on PYTHONPATH (':' separates its entries; a newline or NUL
/// cannot be carried) while `delivery` uses sitecustomize.py: the workload would silently run
/// without the settings.
Result<void> check_pythonpath_dir(const std::string& dir, EnvDelivery delivery, const std::string& target);

/// How a run ended, for the exit status: `done` (0), `interrupted` (3, resumable) or
/// `nothing_succeeded` (1: experiments ran, none is ok and a resume found none finished
/// before, so there is nothing to recommend; failed experiments are still recorded results).
enum class SweepEnding { done, interrupted, nothing_succeeded };

/// The ending of `outcome` (interrupted wins over the rest).
[[nodiscard]] SweepEnding ending_of(const SweepOutcome& outcome);

/// Runs a sweep end to end: records it (or reopens it for a resume), prepares its work directory
/// (workdir_name) and takes it with the target's lock (a directory another runner holds is
/// refused, naming that runner), then runs what is not finished. With `options.search`, a resume hands the
/// search what was recorded (finished_reports) and the search decides what still runs; a search stopped by
/// its budget ends the sweep `interrupted` with the reason, so `--resume` (with a larger budget) continues
/// it. Errors: bad_input when a resume's stored plan or fingerprint no
/// longer matches (naming what differs; nothing is written then); infrastructure from the
/// target or store (the sweep is then marked failed and can be resumed).
Result<SweepOutcome> run_sweep(const SweepRequest& request, Target& target, SweepStore& store,
                               SweepObserver& observer, SweepRunOptions options,
                               const std::atomic<bool>& stop);

}  // namespace ncclsweep::inline sweep
