#pragma once
// Exports of a stored sweep (docs/export.md): whole-sweep tables (json, csv, markdown, junit)
// and deployable forms of one point (sitecustomize.py, env file, NCCL example tuner-plugin
// lines). Pure functions of the loaded data: they never touch the store, the clock or stdout.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/stats/stats.hpp"
#include "results/query/query.hpp"
#include "results/store/records.hpp"

namespace ncclsweep::results {
class Store;
}

namespace ncclsweep::results::exports {

/// A sweep with all its experiments, as the exporters and the HTML report read it
/// (Store::load_sweep loads one).
using SweepData = LoadedSweep;

/// The output formats of `ncclsweep export`.
enum class Format { json, csv, markdown, junit, sitecustomize, env, nccl_tuner, tuner_profile };

/// Parses "json", "csv", "md" (or "markdown"), "junit", "sitecustomize", "env", "nccl-tuner",
/// "tuner-profile";
/// bad_input naming the accepted words otherwise.
[[nodiscard]] Result<Format> parse_format(std::string_view text);
/// True for the formats that export one point (sitecustomize, env, nccl-tuner, tuner-profile).
[[nodiscard]] bool is_point_format(Format format);

// ---- metrics and the best point ------------------------------------------------------------

/// Values of `metric` over the experiment's repeats, in repeat order.
[[nodiscard]] std::vector<double> metric_values(const StoredExperiment& experiment, std::string_view metric);
/// Metric names present in the sweep, in order of first appearance.
[[nodiscard]] std::vector<std::string> metric_names(const SweepData& sweep);
/// Which way `metric` is good in `sweep`: NAME:higher/NAME:lower as written, else the sweep's
/// stored definition, else the default rule (results::resolve_metric, core/spec/metric).
[[nodiscard]] stats::Direction metric_direction(const SweepData& sweep, std::string_view metric);

/// Median with an interval: the 95% median CI when n >= 6, else [min, max] (interval_is_ci false).
struct MetricStats {
    std::size_t n = 0;
    double median = 0;
    double low = 0;   ///< CI low, or min when !interval_is_ci
    double high = 0;  ///< CI high, or max when !interval_is_ci
    bool interval_is_ci = false;
};
/// Stats of `metric` for one experiment; nullopt when it has no samples of it.
[[nodiscard]] std::optional<MetricStats> metric_stats(const StoredExperiment& experiment,
                                                      std::string_view metric);

/// The best point by `metric` (NAME or NAME:higher/lower) under the one rule of
/// results::best_experiment (tie group, simplest point), with its evidence. bad_input when no
/// ok experiment measured it, naming the metrics that exist.
[[nodiscard]] Result<BestExperiment> best_point(const SweepData& sweep, std::string_view metric);
/// The experiment best_point recommends.
[[nodiscard]] Result<const StoredExperiment*> best_experiment(const SweepData& sweep,
                                                              std::string_view metric);
/// The experiment with id `id`; bad_input naming the valid range otherwise.
[[nodiscard]] Result<const StoredExperiment*> find_experiment(const SweepData& sweep, int id);

/// Names of the parameters that take more than one value in the sweep (the "axes" that vary),
/// in order of first appearance; if none varies, all parameter names.
[[nodiscard]] std::vector<std::string> varying_parameters(const SweepData& sweep);
/// The value of parameter `name` of the experiment, nullopt when it has none.
[[nodiscard]] std::optional<std::string> parameter(const StoredExperiment& experiment, std::string_view name);
/// "NCCL_ALGO=Ring tokens=8" over `names` (all params when empty).
[[nodiscard]] std::string params_label(const StoredExperiment& experiment,
                                       const std::vector<std::string>& names = {});
/// The first non-empty line of the diagnosis, control bytes shown as \xNN, cut to 200 characters.
[[nodiscard]] std::string one_line_diagnosis(std::string_view diagnosis);

// ---- text hygiene shared by the XML/HTML/markdown writers ---------------------------------

/// Valid UTF-8 text: invalid sequences become U+FFFD; with `keep_newlines` false every control
/// character (C0 except none, DEL, C1) is written as the visible text "\xNN"; with it true,
/// \n and \t are kept. Output contains no character XML 1.0 forbids.
[[nodiscard]] std::string clean_text(std::string_view text, bool keep_newlines);
/// Whether append_entity turns quotes into entities (attributes need it; markdown text not).
enum class Quotes { escape, keep };
/// Appends the XML/HTML entity for c (& < >, and " ' with Quotes::escape) and returns true;
/// false for any other byte. The one entity escaper of the exporters and the report.
bool append_entity(std::string& out, char c, Quotes quotes);
/// XML/HTML escaping of clean_text(text): & < > " ' as entities; newlines kept in element text.
[[nodiscard]] std::string xml_escape(std::string_view text, bool keep_newlines = true);
/// A number for people and files: shortest round-trip form, "" for NaN/inf.
[[nodiscard]] std::string format_number(double value);

// ---- whole-sweep formats ---------------------------------------------------------------------

/// The sweep as one JSON document (format "ncclsweep.export", version 1): sweep record,
/// experiments with params, env, workload, argv, status, failure, timings, samples and
/// per-metric median/interval. Invalid UTF-8 becomes U+FFFD.
[[nodiscard]] std::string to_json(const SweepData& sweep);
/// CSV (RFC 4180, CRLF line ends, header row): one row per experiment x metric; an experiment
/// without samples gets one row with an empty metric. Parameters are columns "param:NAME".
[[nodiscard]] std::string to_csv(const SweepData& sweep);
/// A markdown table (GitHub flavour) of every experiment: varying parameters, status, median
/// of `metric` with its interval, n, failure class and diagnosis. Cells are escaped.
[[nodiscard]] std::string to_markdown(const SweepData& sweep, std::string_view metric);
/// JUnit XML: one <testcase> per experiment (classname = sweep name, name = "id params");
/// failed/timed_out as <failure type=CLASS message=one-line>, infra_error as <error>,
/// skipped/pending/running as <skipped>; medians as <properties>.
[[nodiscard]] std::string to_junit(const SweepData& sweep);

// ---- one point -------------------------------------------------------------------------------

/// render::sitecustomize of the experiment's environment, naming sweep, id and key.
[[nodiscard]] std::string to_sitecustomize(const SweepData& sweep, const StoredExperiment& experiment);
/// render::env_file of the experiment's environment (bad_input for an unrepresentable value).
[[nodiscard]] Result<std::string> to_env_file(const SweepData& sweep, const StoredExperiment& experiment);

/// Message sizes of the workload of one experiment, from its workload parameters.
struct MessageSizes {
    int ranks = 1;                               ///< tp
    std::uint64_t allreduce_bytes = 0;           ///< tokens x hidden x 2 (bf16)
    std::optional<std::uint64_t> allgather_min;  ///< logits all-gather, per-rank bytes
    std::optional<std::uint64_t> allgather_max;  ///< logits all-gather, whole output buffer
};
/// Sizes from the workload params tokens, tp, model (kimi-k2.5, deepseek-v3, llama-70b) or
/// hidden/vocab overrides; bad_input saying which parameter is missing.
[[nodiscard]] Result<MessageSizes> message_sizes(const StoredExperiment& experiment);
/// Lines for NCCL's example tuner plugin (NCCL_TUNER_CONFIG_FILE): '#' comment lines, then one
/// CSV line per collective the experiment's NCCL_ALGO/NCCL_PROTO force, covering the byte range
/// the sweep's workloads use. bad_input for what the plugin cannot express (several algorithms
/// for one collective, an algorithm without a protocol, channel bounds that differ, ...).
/// With `settings` (the point's judged settings) and recorded TUNING lines, the lines force each
/// collective a change touched to the point's own effective choice (what was measured).
[[nodiscard]] Result<std::string> to_nccl_tuner(const SweepData& sweep, const StoredExperiment& experiment,
                                                const PointSettings* settings = nullptr);
/// Why NCCL's example plugin is a poor deployment (checked against plugins/tuner/example/plugin.c):
/// written into the nccl-tuner file and to stderr whenever that format is exported.
inline constexpr std::string_view k_example_plugin_warning =
    "NCCL's example tuner plugin caps every collective, matched or not, at one channel "
    "(plugins/tuner/example/plugin.c, pluginGetCollInfo sets *nChannels = 1 first); prefer "
    "--format tuner-profile with libnccl-tuner-ncclsweep.so";

/// The profile of our tuner plugin (libnccl-tuner-ncclsweep.so, tuner/profile.h) for one
/// experiment: a rule per collective it forces to exactly one algorithm and protocol, at the
/// exact message sizes its workload ran (message_sizes; all-gather as the whole output buffer,
/// the size NCCL passes to a tuner), channels only when the sweep varied them and the point pins
/// a count. What cannot be a rule is a '#' note. bad_input for unknown sizes or unparsable
/// NCCL_ALGO/NCCL_PROTO.
/// With `settings` and recorded TUNING lines, the rules are the point's own effective choice for
/// each collective a change touched (results/query/settings.hpp tuner_choices), so the profile
/// deploys what the env file deploys.
[[nodiscard]] Result<std::string> to_tuner_profile(const SweepData& sweep, const StoredExperiment& experiment,
                                                   std::string_view metric,
                                                   const PointSettings* settings = nullptr);
/// The same over the whole sweep: per message size (rank count, all-reduce and all-gather
/// bytes) the ok experiment with the best median of `metric`, each contributing its rules.
/// bad_input when no ok experiment measured `metric`.
[[nodiscard]] Result<std::string> to_tuner_profile_best(const SweepData& sweep, std::string_view metric);

/// The point as deployed: the sweep's fixed environment, then the settings that change what NCCL
/// does (NCCL_ALGO/NCCL_PROTO scoped to the collectives they changed); NCCL's own choices and
/// inert settings left out (results/query/settings.hpp). What every point format renders.
[[nodiscard]] StoredExperiment deployed_point(const StoredExperiment& point, const PointSettings& settings);

/// What `ncclsweep export` asks for.
struct ExportRequest {
    Format format = Format::json;
    std::string metric = "tok_s";   ///< markdown column; --best ranking
    bool best = false;              ///< point formats: the best experiment by `metric`
    std::optional<int> experiment;  ///< point formats: this experiment
    bool force = false;             ///< point formats: export a point that did not run ok (it says so)
};
/// Produces the text of `request.format`. A point format needs `best` or `experiment`; a
/// whole-sweep format refuses them (bad_input, saying what to do). A point that did not run to
/// a result (failed, timed out, pruned, pending, ...) is refused (bad_input) unless `force`; the
/// file then says so in its first lines. Every point format deploys the same settings
/// (results/query/settings.hpp judge_settings): the changes, scoped; the rest named in comments.
[[nodiscard]] Result<std::string> export_sweep(const SweepData& sweep, const ExportRequest& request);

}  // namespace ncclsweep::results::exports

namespace ncclsweep::results::exports {

/// Writes `text` to `path` atomically (a temporary file in the same folder, then rename), so
/// a reader never sees half a file. infrastructure error naming the path otherwise.
[[nodiscard]] Result<void> write_file_atomically(const std::string& path, std::string_view text);

}  // namespace ncclsweep::results::exports
