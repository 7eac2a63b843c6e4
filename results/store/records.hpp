#pragma once
// What the store keeps: sweeps, experiments with their outcome, samples and events.
// docs/results-schema.md maps each field to its column.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment.hpp"
#include "core/spec/metric.hpp"

namespace ncclsweep::results {

/// Life of a sweep. A sweep killed with -9 stays `running`; SweepInfo::runner_alive tells such
/// a sweep from one still running (on the same host).
enum class SweepState { running, done, interrupted, failed };

/// Life of one experiment. pending -> running -> ok | failed | timed_out | infra_error | skipped;
/// a search (docs/search.md) records `pruned` (never ran: a value of it kept failing) and
/// `dropped` (ran ok, then statistically behind the leader; its samples are kept).
enum class ExperimentStatus {
    pending,
    running,
    ok,
    failed,
    timed_out,
    infra_error,
    skipped,
    pruned,
    dropped
};

/// Severity of an event.
enum class EventLevel { info, warning, error };

/// The text stored for a state ("running", "done", ...).
[[nodiscard]] std::string_view to_string(SweepState state);
/// The text stored for a status ("pending", "ok", "timed_out", ...).
[[nodiscard]] std::string_view to_string(ExperimentStatus status);
/// The text stored for a level ("info", "warning", "error").
[[nodiscard]] std::string_view to_string(EventLevel level);
/// Parses a stored state; empty when unknown.
[[nodiscard]] std::optional<SweepState> parse_sweep_state(std::string_view text);
/// Parses a stored status; empty when unknown.
[[nodiscard]] std::optional<ExperimentStatus> parse_experiment_status(std::string_view text);
/// Parses a stored level; empty when unknown.
[[nodiscard]] std::optional<EventLevel> parse_event_level(std::string_view text);

/// True for statuses a resumed sweep does not run again: ok, failed, timed_out (verdicts about
/// the configuration), skipped, pruned and dropped (decisions; a resumed search restores them). pending,
/// running and infra_error (the host or connection failed, not the configuration) are run again.
[[nodiscard]] bool is_finished(ExperimentStatus status);

/// What a sweep is, given when it is created.
struct SweepRecord {
    std::string name;                       ///< `sweep:` from the spec
    std::string tag;                        ///< --tag ("" = none, stored as NULL)
    std::string spec_path;                  ///< where the spec was read from
    std::string spec_text;                  ///< the full spec text
    std::string spec_hash;                  ///< hash of spec_text ("" = the store computes FNV-1a 64)
    std::string target;                     ///< "local" or "ssh://user@host:port"
    std::string host_preflight;             ///< JSON text from the host preflight ("" = none)
    std::string tool_version;               ///< ncclsweep version that ran it
    int repeats = 1;                        ///< samples per experiment
    std::string plan_fingerprint;           ///< JSON of core PlanFingerprint ("" = recorded before v3)
    std::vector<MetricDefinition> metrics;  ///< declared metric definitions (empty = the default rule)
    std::string backend;  ///< engine backend of the numbers: "sim", "cuda", "" (unknown / command)
};

/// Number of experiments of a sweep in each status.
struct StatusCounts {
    int pending = 0;
    int running = 0;
    int ok = 0;
    int failed = 0;
    int timed_out = 0;
    int infra_error = 0;
    int skipped = 0;
    int pruned = 0;
    int dropped = 0;
    /// Sum of all counts.
    [[nodiscard]] int total() const {
        return pending + running + ok + failed + timed_out + infra_error + skipped + pruned + dropped;
    }
    /// The counter for `status`.
    int& at(ExperimentStatus status);
};

/// A stored sweep with its bookkeeping.
struct SweepInfo {
    std::int64_t id = 0;
    SweepRecord record;
    SweepState state = SweepState::running;
    std::string created_at;                  ///< ISO-8601 UTC, e.g. 2025-11-29T15:33:07.123Z
    std::string started_at;                  ///< when it (last) started running: creation or latest resume
    std::string ended_at;                    ///< when it last stopped ("" while running)
    std::string end_reason;                  ///< why it stopped when interrupted/failed ("" otherwise)
    int resumes = 0;                         ///< how many times it was resumed
    std::optional<std::int64_t> runner_pid;  ///< process that created/resumed it
    std::string runner_host;                 ///< host name of that process
    /// Running sweeps only, as read: whether runner_pid still exists. Empty when the sweep is not
    /// running or ran on another host (nothing can be told from here).
    std::optional<bool> runner_alive;
    StatusCounts counts;  ///< experiments per status
};

/// For a running sweep recorded by a process on this host: whether that process still exists
/// and is an ncclsweep (its /proc comm starts with "ncclsweep": a reused pid does not count).
/// Empty when the sweep is not running or ran elsewhere (nothing can be told from here).
[[nodiscard]] std::optional<bool> probe_runner(const SweepInfo& sweep);

/// The state as shown to people: the stored one, except "running, runner gone" for a sweep
/// whose process is known to be gone (killed with -9, host rebooted).
[[nodiscard]] std::string state_text(const SweepInfo& sweep);

/// One measured value of one repeat.
struct Sample {
    int repeat = 0;      ///< 0-based repeat index
    std::string metric;  ///< e.g. "tok_s", "verify_us_p50"
    double value = 0;
    friend bool operator==(const Sample&, const Sample&) = default;
};

/// Seconds spent in each watcher phase (absent = not reached / not measured).
struct PhaseTimings {
    std::optional<double> init_s;     ///< start until capture began (or until ready)
    std::optional<double> capture_s;  ///< graph capture
    std::optional<double> ready_s;    ///< start until ready
    std::optional<double> measure_s;  ///< ready until done
    std::optional<double> total_s;    ///< start until the end (all repeats)
    friend bool operator==(const PhaseTimings&, const PhaseTimings&) = default;
};

/// A warning or note, of the sweep or of one experiment.
struct Event {
    EventLevel level = EventLevel::warning;
    std::string code;     ///< short stable identifier, e.g. "nccl_ignored_setting"
    std::string message;  ///< complete sentence for people
    std::string at;       ///< ISO-8601 UTC; set by the store when recorded
};

/// The code of the info event that stores ExperimentOutcome::collective_times (no schema change).
inline constexpr std::string_view k_collective_times_event = "collective_times";

/// How an experiment ended: written by record_experiment in one transaction.
struct ExperimentOutcome {
    ExperimentStatus status = ExperimentStatus::ok;
    std::string failure_class;               ///< graph_capture, nccl, cuda, oom, hang, ... ("" when ok)
    std::string diagnosis;                   ///< excerpt: matching line with context (any bytes)
    std::optional<double> detected_after_s;  ///< seconds from start until the failure was seen
    std::string effective_nccl;              ///< what NCCL actually used (from its TUNING lines)
    /// What the engine's collective times rest on: "calibrated", "relative" or "modelled" (tpverify's
    /// sim; "" when the engine does not say). Stored as an info event of code "collective_times".
    std::string collective_times;
    PhaseTimings timings;
    std::optional<std::int64_t> exit_code;    ///< process exit status, when it exited
    std::optional<std::int64_t> exit_signal;  ///< terminating signal, when killed
    std::vector<Sample> samples;              ///< all repeats
    std::vector<Event> events;                ///< warnings seen during this experiment
};

/// An experiment as loaded back: the planned point, its outcome and bookkeeping.
struct StoredExperiment {
    Experiment experiment;      ///< id, key, canonical, params, env, workload, argv, shell
    ExperimentOutcome outcome;  ///< status may be pending/running when not finished
    int attempts = 0;           ///< how many times it was started
    std::string started_at;     ///< ISO-8601 UTC of the last start ("" = never)
    std::string ended_at;       ///< ISO-8601 UTC of the end ("" = not ended)
};

/// A sweep with all its experiments (id order), as tables, exporters and the report read it.
struct LoadedSweep {
    SweepInfo info;
    std::vector<StoredExperiment> experiments;
};

}  // namespace ncclsweep::results
