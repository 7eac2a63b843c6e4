#pragma once
// The sweep spec (docs/spec.md): the parsed, not yet expanded, form.
// Parsing lives in core/spec/spec_parser.*; expansion in core/plan/planner.*.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/spec/metric.hpp"

namespace ncclsweep::inline spec {

/// Where something came from: file, 1-based line and column (0 = unknown, e.g. a CLI flag).
struct SourceMark {
    std::string file;  ///< spec path, or "--axis"/"--set" for command-line overrides
    int line = 0;
    int column = 0;
    /// "file:line:col" (or just "file" when line is 0).
    [[nodiscard]] std::string to_string() const;
};

/// One scalar value as written in the spec (all values are kept as text).
struct SpecValue {
    std::string text;
    SourceMark mark;
};

/// One axis: its values in order. UPPER_CASE names are environment variables;
/// lower_case names are workload parameters (fusion, tokens, tp, graph, ...).
struct Axis {
    std::string name;
    std::vector<SpecValue> values;
    SourceMark mark;
    /// True for an environment-variable axis (first character is an upper-case letter).
    [[nodiscard]] bool is_env() const;
};

/// A partial assignment used by `exclude` (each key may allow several values).
struct ExcludeRule {
    std::vector<std::pair<std::string, std::vector<SpecValue>>> match;
    SourceMark mark;
};

/// One extra point from `include`.
struct IncludePoint {
    std::vector<std::pair<std::string, SpecValue>> values;
    SourceMark mark;
};

/// How the environment reaches the workload (target.env_delivery).
enum class EnvDelivery { sitecustomize, env, both };

/// `target.slurm:` — how a `slurm://PARTITION` target submits its job arrays.
struct SlurmSpec {
    std::optional<int> array_limit;   ///< tasks of the array running at once (`--array=...%N`)
    std::string gres;                 ///< `--gres` ("" = none)
    std::string time = "00:30:00";    ///< `--time` of each task
    std::string account;              ///< `--account` ("" = the user's default)
    std::vector<std::string> sbatch;  ///< more sbatch options, each one word
    double poll_seconds = 2;          ///< seconds between squeue calls
    /// Give up when, for this long, tasks of the sweep wait in the queue and none of them runs
    /// (they are cancelled, the sweep stops, resumable); nullopt = wait as long as Slurm does.
    std::optional<double> pending_timeout_seconds;
};

/// `target:` — where experiments run.
struct TargetSpec {
    std::string url = "local";  ///< "local", "ssh://user@host[:port]" or "slurm://PARTITION"
    /// A pool of ssh:// hosts (instead of url), one experiment each at a time; `url` then reads
    /// "hosts:ssh://a,ssh://b" (shown by plan, part of the fingerprint).
    std::vector<std::string> hosts;
    SlurmSpec slurm;
    EnvDelivery env_delivery = EnvDelivery::both;
    std::string workdir;  ///< per-sweep work directory root on the host ("" = default)
    std::optional<std::string> identity_file;
    bool accept_new_host_key = false;
    SourceMark mark;
};

/// One user watcher rule (`workload.rules` or --rules file).
struct RuleSpec {
    std::string name;
    std::string regex;
    std::string failure_class;  ///< graph_capture, nccl, cuda, oom, python, sitecustomize, hang, ...
    bool fatal = true;          ///< false = warning only
    SourceMark mark;
};

/// How the matches of one metric in one run become its value (docs/spec.md "Metrics").
enum class Aggregate {
    last,    ///< the last match (the default: a final summary line)
    median,  ///< the median of the matches (a server logging throughput as it goes)
    mean,    ///< their mean
};

/// `workload.metrics.NAME: {aggregate: median, warmup: 2}`: the matches of a run after the first
/// `warmup` ones, aggregated.
struct MetricExtraction {
    Aggregate aggregate = Aggregate::last;
    int warmup = 0;  ///< matches of a run skipped before aggregating
};

/// What ends one run of a command workload that becomes ready (a server) without a `client:`.
struct StopAfter {
    enum class Kind {
        none,     ///< not given
        exit,     ///< `stop_after: exit`: the command exits by itself once it has measured
        matches,  ///< `stop_after: 20 matches`: stopped once every metric matched that often
        seconds,  ///< `stop_after: 60s`: stopped that long after it became ready
    };
    Kind kind = Kind::none;
    int matches = 0;
    double seconds = 0;
    SourceMark mark;
};

/// `workload:` — what each experiment runs.
struct WorkloadSpec {
    /// "tpverify" when `engine:` is given; empty when `command:` is used.
    std::string engine;
    /// engine: fixed tpverify flags (name -> value), in file order. "true" = bare flag.
    std::vector<std::pair<std::string, SpecValue>> args;
    /// command: argv form (list) or a single string run by /bin/sh -c. `{name}` placeholders
    /// are replaced by parameter values (as one argv element / shell-quoted word).
    std::vector<SpecValue> command;
    bool command_is_shell = false;
    /// Optional client command started after the server reports ready (same forms as command).
    std::vector<SpecValue> client;
    bool client_is_shell = false;
    std::string ready;  ///< regex: the server is ready
    std::vector<std::pair<std::string, std::string>>
        metrics;                                       ///< metric name -> regex with one capture group
    std::vector<MetricDefinition> metric_definitions;  ///< one per `metrics` entry: unit, better
    std::vector<MetricExtraction> metric_extraction;   ///< one per `metrics` entry: aggregate, warmup
    StopAfter stop_after;                              ///< what ends a server run without a client
    SourceMark ready_mark;                             ///< where `ready:` was written
    std::vector<RuleSpec> rules;
    SourceMark mark;
};

/// `timeouts:` in seconds (0 = none).
struct Timeouts {
    double startup = 600;
    double capture = 600;
    double stall = 120;
    double total = 3600;
};

/// What a sweep may spend (`search.budget` or `run --budget`): wall-clock seconds of workload
/// runs, or a number of workload runs (a run = one repeat of one experiment). 0 = no limit.
struct Budget {
    double seconds = 0;
    int runs = 0;
    /// True when neither limit is set.
    [[nodiscard]] bool empty() const { return seconds <= 0 && runs <= 0; }
    /// "2h", "90m", "45s" or "60 runs" ("none" when empty).
    [[nodiscard]] std::string to_string() const;
};

/// `search.race`: successive elimination of the points that are statistically behind.
struct RaceSpec {
    int min_repeats = 1;       ///< samples every point gets in the first round
    int max_repeats = 0;       ///< samples a point gets at most (0 = the spec's `repeats`)
    double confidence = 0.95;  ///< 1 - the U test's alpha for dropping a point
};

/// `search:` — spend the runs where the answer is (docs/search.md). Absent = the full product,
/// every point with every repeat, in plan order.
struct SearchSpec {
    int prune_after = 0;  ///< `prune.after`: failures of one value with one class that prune it (0 = off)
    std::optional<RaceSpec> race;
    Budget budget;
    std::string metric;  ///< the metric the race compares ("" = run's --metric)
    SourceMark mark;
    /// True when any of prune, race or budget is set.
    [[nodiscard]] bool enabled() const { return prune_after > 0 || race.has_value() || !budget.empty(); }
    /// Samples a point gets at most: race.max_repeats, else `repeats` (the spec's).
    [[nodiscard]] int max_repeats(int repeats) const {
        if (!race) return repeats;
        return race->max_repeats > 0 ? race->max_repeats
                                     : (repeats > race->min_repeats ? repeats : race->min_repeats);
    }
    /// One line for people and the plan fingerprint, e.g. "prune after 2 failures of one class;
    /// race 2..8 repeats at 95% confidence; budget 60 runs" (`repeats` fills an unset max_repeats).
    [[nodiscard]] std::string describe(int repeats, bool with_budget = true) const;
};

/// `baseline:` — whether the planner adds NCCL's defaults point (docs/spec.md "Baseline").
enum class Baseline {
    defaults,  ///< one point per combination of the other axes with none of the swept NCCL variables set
    none,      ///< no such point: the sweep's own points only
};

/// `repeats: auto` (docs/spec.md "Repeats"): `run` picks the repeats that catch a 5% slowdown of
/// one experiment in 90% of nights at the noise of the previous sweep of this spec.
struct AutoRepeatsSpec {
    double alpha = 0.05;  ///< the level the gate's diff runs at (`diff --alpha`; 0.05 is diff's default)
    int max = 50;         ///< never more than this (a warning says what the gate then sees)
    int fallback = 12;    ///< `default:` the repeats when there is no earlier sweep to learn from
    SourceMark mark;      ///< where `repeats:` was written
};

/// The whole parsed spec.
struct Spec {
    std::string path;  ///< file it was read from
    std::string text;  ///< full original text (stored with the sweep)
    std::string name;  ///< `sweep:`
    TargetSpec target;
    WorkloadSpec workload;
    std::vector<std::pair<std::string, SpecValue>> env;  ///< fixed variables, file order
    std::vector<Axis> axes;                              ///< file order (first axis slowest)
    std::vector<std::vector<std::string>> zip;           ///< groups of axis names
    std::vector<SourceMark> zip_marks;
    std::vector<ExcludeRule> exclude;
    std::vector<IncludePoint> include;
    int repeats = 1;  ///< with `repeats: auto`, its `default:` until `run` decides
    std::optional<AutoRepeatsSpec> auto_repeats;
    Timeouts timeouts;
    SearchSpec search;
    Baseline baseline = Baseline::defaults;
    SourceMark baseline_mark;  ///< where `baseline:` was written (file only when absent)
};

}  // namespace ncclsweep::inline spec
