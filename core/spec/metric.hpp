#pragma once
// One definition of a metric: its name, unit and which direction is better. The spec declares
// it (`metrics: {warm_s: {regex: ..., better: lower, unit: s}}`), tpverify declares its own
// (`tpverify --describe --json`), and every sweep stores the definitions it ran with, so run,
// results, best, diff, export and report all read "better" from the same place.
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/stats/stats.hpp"

namespace ncclsweep::inline spec {

/// What a metric is.
struct MetricDefinition {
    std::string name;  ///< e.g. "tok_s", "warm_s"
    std::string unit;  ///< e.g. "tok/s", "s", "us" ("" = not said)
    stats::Direction better = stats::Direction::higher_is_better;
    friend bool operator==(const MetricDefinition&, const MetricDefinition&) = default;
};

/// The documented default for a name without a declared direction (docs/spec.md "Metrics"):
/// rates (holding `tok_s`, `per_s`, `throughput`, `bandwidth`, `gbps`) are higher-is-better;
/// times (a `_s`, `_ms`, `_us` or `_ns` word, or `latency`, `ttft`, `itl`, `tpot`) and the
/// spread `rsd` lower-is-better; anything else higher-is-better.
[[nodiscard]] stats::Direction default_direction(std::string_view name);

/// The definition of `name` among `declared`, else one with the default direction and no unit.
[[nodiscard]] MetricDefinition definition_of(std::string_view name,
                                             const std::vector<MetricDefinition>& declared);

/// Parses "higher" / "lower" (bad_input otherwise, naming `where`).
[[nodiscard]] Result<stats::Direction> parse_better(std::string_view text, std::string_view where);

/// "higher" or "lower".
[[nodiscard]] std::string_view better_word(stats::Direction direction);

/// A metric chosen on the command line (--metric), with the direction that makes it better.
struct MetricChoice {
    std::string name;  ///< e.g. "tok_s"
    stats::Direction direction = stats::Direction::higher_is_better;
    bool direction_given = false;  ///< NAME:higher / NAME:lower was written
    friend bool operator==(const MetricChoice&, const MetricChoice&) = default;
};

/// Parses "tok_s", "verify_us_p50:lower" or "goodput:higher"; without a suffix the direction
/// comes from default_direction(). bad_input for an empty name or an unknown suffix.
[[nodiscard]] Result<MetricChoice> parse_metric_choice(std::string_view text);

/// Definitions as JSON text ([{"name":..,"unit":..,"better":"higher"}], the stored form).
[[nodiscard]] std::string metrics_to_json(const std::vector<MetricDefinition>& metrics);

/// Parses metrics_to_json's text ("" = none); bad_input when it is not that.
[[nodiscard]] Result<std::vector<MetricDefinition>> metrics_from_json(std::string_view text);

}  // namespace ncclsweep::inline spec
