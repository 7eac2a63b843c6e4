#pragma once
// `ncclsweep run` as a library call: the flags as data in, the order of its checks (plan,
// local programs, target, preflight and the GPU policy, the engine, store and resume), the
// options the sweep loop runs with, and how the run ends. The host and the database are
// interfaces (remote/ and results/ implement them), so the policy is tested with fakes
// (tests/core/test_run_prepare.cpp); cli/run.cpp parses the flags, calls this, and prints.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/exit_status.hpp"
#include "core/plan/auto_repeats.hpp"
#include "core/plan/planner.hpp"
#include "core/result.hpp"
#include "core/spec/metric.hpp"
#include "core/spec/spec.hpp"
#include "core/sweep/progress.hpp"
#include "core/sweep/sweep_session.hpp"
#include "core/target.hpp"

namespace ncclsweep::inline sweep {

/// The flags of `ncclsweep run`, as given (cli/run.cpp fills it; nothing is checked yet).
struct RunFlags {
    std::string spec_path;
    std::vector<std::string> axis;  ///< --axis NAME=v1,v2, in the order given
    std::vector<std::string> set;   ///< --set NAME=v, in the order given
    std::uint64_t max_experiments = k_default_max_experiments;
    std::string engine;      ///< --engine ("" = next to this binary, then PATH)
    std::string target;      ///< --target ("" = the spec's target; cli checks the URL's form)
    std::string db;          ///< --db as given, for the command line (RunRecord opens the database)
    std::string tag;         ///< --tag
    std::string rules_file;  ///< --rules
    std::string budget;      ///< --budget ("" = the spec's search.budget)
    std::optional<std::string> resume;  ///< --resume REF; "auto" = the newest unfinished sweep of the spec
    bool force = false;                 ///< --force: busy GPUs do not stop the run
    /// --metric NAME[:higher|:lower]; "" = the spec's first declared metric, else tok_s.
    std::string metric;
    std::chrono::milliseconds kill_grace{2000};
};

/// What the run asks of the host's preflight (the policy: decided from the target).
struct HostChecks {
    bool refuse_busy_gpus = false;  ///< fail when compute processes already use the host's GPUs
    bool release_check = false;     ///< return a check that the last experiment let go of its GPUs
};

/// What the host's preflight found, in the words the run needs.
struct HostFacts {
    std::string record;  ///< stored with the sweep (JSON)
    std::string gpus;    ///< for the header: "8 x NVIDIA H100 80GB, driver 550.54" or "none found"
    std::string nccl;    ///< for the header: "2.21.5 (torch)" or "not found on the host"
    std::vector<std::string> notes;     ///< what could not be determined and why
    std::vector<std::string> warnings;  ///< worth the user's attention
    /// With HostChecks::release_check: run before each experiment with the process groups the
    /// previous one started (SweepRunOptions::before_experiment); empty otherwise.
    std::function<Result<void>(const std::vector<long>&)> before_experiment;
};

/// Where a run executes (remote/ implements it: remote/run_host.hpp).
class RunHost {
public:
    virtual ~RunHost() = default;
    /// The target `spec` names (local, ssh, a pool, Slurm). bad_input for a malformed target;
    /// infrastructure when it cannot be reached.
    virtual Result<std::unique_ptr<Target>> open(const TargetSpec& spec) = 0;
    /// Checks the host before a sweep and applies `checks`. infrastructure when it cannot be
    /// probed, or its GPUs are busy and `checks.refuse_busy_gpus`.
    virtual Result<HostFacts> preflight(Target& target, const HostChecks& checks) = 0;
};

/// Where a run records its sweep (results/ implements it over the SQLite database).
class RunRecord {
public:
    virtual ~RunRecord() = default;
    /// Opens the database (created when missing); the sweep is written through the returned
    /// store, which lives as long as this. infrastructure when it cannot be opened.
    virtual Result<SweepStore*> open() = 0;
    /// The sweep --resume `ref` continues (an id, latest, latest:TAG; "auto" = the newest
    /// unfinished sweep named `name`). bad_input when there is none.
    virtual Result<std::int64_t> resume_candidate(const std::string& ref, const std::string& name) = 0;
    /// Where the database is, for messages.
    [[nodiscard]] virtual std::string where() const = 0;
    /// The sweep written through open()'s store: 0 before one was created or reopened.
    [[nodiscard]] virtual std::int64_t recorded_sweep() const = 0;
    /// What `repeats: auto` learns the noise from: `metric`'s samples per experiment key (ok
    /// experiments) of the newest sweep tagged `tag` (named `name` when `tag` is empty), sweep
    /// `except` left out, that has any. Empty when there is none; the base class keeps no history.
    virtual Result<std::optional<NoiseHistory>> previous_samples(const std::string& /*name*/,
                                                                 const std::string& /*tag*/,
                                                                 const std::string& /*metric*/,
                                                                 std::int64_t /*except*/) {
        return std::optional<NoiseHistory>{};
    }
    /// The repeats sweep `id` was recorded with (a resume of `repeats: auto` keeps them); empty
    /// when unknown (the base class).
    virtual Result<std::optional<int>> recorded_repeats(std::int64_t /*id*/) { return std::optional<int>{}; }
};

/// A run ready to start: everything decided, nothing written yet.
struct PreparedRun {
    Spec spec;
    std::unique_ptr<Target> target;
    HostFacts host;
    SweepStore* store = nullptr;  ///< RunRecord::open()'s
    SweepRequest request;         ///< the plan (expanded once), the new sweep or the one to resume
    SweepRunOptions options;      ///< what the sweep loop runs with
    RunHeader header;
    MetricChoice metric;              ///< --metric, parsed
    std::vector<std::string> search;  ///< what the search will do ("search: ..." notices); empty without one
    std::string repeats_line;         ///< what `repeats: auto` decided and why; empty without it
    bool repeats_capped = false;      ///< it needed more than its max: said as a warning
    std::string command_line;         ///< the command that starts this run again
    /// The command that continues this run with twice its search budget (docs/search.md); empty
    /// without a budget.
    std::string continue_command;
};

/// Plans and checks a run, in this order, stopping at the first error: the spec with --axis,
/// --set, --budget and --target; the plan (expanded once: NCCL errors and grouped warnings,
/// logged); the watcher's rules; the local programs; the target (workload.client is refused on
/// Slurm); its preflight (busy GPUs refused unless --force, and a GPU-release check between
/// experiments, both only on one host that is not a batch scheduler); the engine's parameters
/// and points; the environment the target's commands inherit (inherited_environment: said once
/// as a warning, recorded with the sweep); then the database, the sweep --resume names, and for
/// `repeats: auto` the repeats (a resume keeps its sweep's; else from the noise of
/// RunRecord::previous_samples, decide_auto_repeats, noted with the sweep as `repeats_auto`). The
/// NCCL_DEBUG tuning request is added unless the spec sets NCCL_DEBUG or NCCL_DEBUG_SUBSYS.
/// bad_input (exit 2) for the spec, flags and engine parameters, infrastructure (exit 3) for the
/// host and database; the database is not touched before every check passed.
[[nodiscard]] Result<PreparedRun> prepare_run(const RunFlags& flags, RunHost& host, RunRecord& record);

/// What a run did, for the summary the caller prints and the exit status.
struct RunReport {
    SweepOutcome outcome;
    std::string database;                       ///< RunRecord::where()
    std::vector<MetricDefinition> definitions;  ///< what sorts the summary (--metric's direction first)
    MetricChoice metric;                        ///< --metric
    bool searched = false;                      ///< a search ran (docs/search.md)
    std::string command_line;                   ///< the command that starts it again
    std::string backend;                        ///< the workload's backend ("sim": say SIMULATED)
    std::string budget;                         ///< the search's budget as written ("" = none)
    std::string continue_command;               ///< PreparedRun::continue_command
};

/// Prints the header and the search's plan to `printer`, runs the sweep, and adds to `printer`
/// the experiments a resume found finished (so its summary covers the whole sweep). An error
/// of the sweep loop says which sweep is recorded and the command that continues it.
[[nodiscard]] Result<RunReport> execute_run(PreparedRun& run, RunRecord& record, ProgressPrinter& printer,
                                            const std::atomic<bool>& stop);

/// prepare_run, then execute_run: all of `ncclsweep run` but the summary on stdout.
[[nodiscard]] Result<RunReport> run_sweep_command(const RunFlags& flags, RunHost& host, RunRecord& record,
                                                  ProgressPrinter& printer, const std::atomic<bool>& stop);

/// The command that starts a run with `flags` again: the spec and every flag that shapes the
/// plan, each word shell-quoted when it needs it (the resume hint; stored with the sweep).
[[nodiscard]] std::string run_command_line(const RunFlags& flags);

/// The lines under the summary table: "sweep N: X ran (Y ok, Z failed)...; results in DB", and
/// how a search ended.
[[nodiscard]] std::vector<std::string> closing_lines(const RunReport& report);

/// Says how the run ended (an interrupt and the command that resumes it, nothing succeeded, a
/// spent budget) on stderr and returns the exit status: 3 interrupted, 1 nothing succeeded,
/// else 0.
[[nodiscard]] ExitStatus conclude_run(const RunReport& report, SweepObserver& printer);

}  // namespace ncclsweep::inline sweep
