// `repeats: auto`: the noise of the previous sweep -> the repeats a 5% gate needs.
#include "core/plan/auto_repeats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/stats/stats.hpp"

namespace ncclsweep::inline plan {
namespace {

std::string how_picked(const AutoRepeatsSpec& spec, std::size_t experiments) {
    return fmt::format(
        "to catch a 5% slowdown of one experiment in 90% of nights with Holm over {} "
        "comparison{} at alpha {}",
        experiments, experiments == 1 ? "" : "s", stats::format_level(spec.alpha));
}

}  // namespace

AutoRepeatsDecision decide_auto_repeats(const AutoRepeatsSpec& spec,
                                        const std::vector<Experiment>& experiments,
                                        const std::optional<NoiseHistory>& history, const std::string& metric,
                                        const std::string& source) {
    AutoRepeatsDecision out;
    // The largest corrected noise over the experiments: the one that slows may be any, and the
    // gate must catch it too (docs/statistics.md "repeats: auto" says why not the median).
    int measured = 0;
    double largest = 0;
    if (history)
        for (const auto& experiment : experiments) {
            auto found = history->samples.find(experiment.key);
            if (found == history->samples.end() || found->second.size() < 2) continue;
            const double noise = stats::relative_noise_corrected(found->second);
            if (!std::isfinite(noise)) continue;
            ++measured;
            largest = std::max(largest, noise);
        }
    if (measured == 0) {
        out.repeats = spec.fallback;
        out.line = fmt::format(
            "repeats: auto -> {} (the default: no earlier sweep with {} has {} samples of this plan's "
            "experiments to measure the noise on; the next run will)",
            spec.fallback, source, metric);
        return out;
    }
    out.noise = largest;
    out.from_sweep = static_cast<int>(history->sweep_id);
    out.experiments = measured;
    const stats::GateRepeats pick =
        stats::repeats_for_gate(out.noise, experiments.size(), spec.alpha, spec.max);
    out.repeats = pick.repeats;
    out.capped = pick.capped;
    const std::string noise = fmt::format(
        "noise {:.2g}% per run in {} (the largest over {} experiment{}, small-sample corrected) from sweep "
        "{}",
        out.noise * 100, metric, out.experiments, out.experiments == 1 ? "" : "s", out.from_sweep);
    if (!pick.capped) {
        out.line = fmt::format("repeats: auto -> {} ({}; {})", out.repeats, noise,
                               how_picked(spec, experiments.size()));
        return out;
    }
    const double sees = stats::detectable_shift(
        static_cast<std::size_t>(pick.repeats), static_cast<std::size_t>(pick.repeats), out.noise,
        spec.alpha / static_cast<double>(experiments.size()), stats::k_gate_power);
    out.line = fmt::format(
        "repeats: auto -> {}, its max ({}; {} would need {}): the gate then catches only a slowdown of "
        "{} in 90% of nights; raise repeats.auto.max, or quiet the host",
        out.repeats, noise, how_picked(spec, experiments.size()),
        pick.needed > 0 ? std::to_string(pick.needed) : std::string("more than 1000"),
        std::isfinite(sees) ? fmt::format("{:.2g}%", sees * 100) : std::string("any size"));
    return out;
}

std::string auto_repeats_plan_line(const AutoRepeatsSpec& spec, std::size_t experiments) {
    std::string examples;
    for (double noise : {0.01, 0.02, 0.03, 0.05}) {
        const stats::GateRepeats pick = stats::repeats_for_gate(noise, experiments, spec.alpha, spec.max);
        examples += fmt::format("{}{:g}% -> {}{}", examples.empty() ? "" : ", ", noise * 100, pick.repeats,
                                pick.capped ? " (max)" : "");
    }
    return fmt::format(
        "repeats: auto, decided by `run` from the noise of the previous sweep of this spec (same --tag, "
        "else same sweep name) {}; {} without one, at most {}. At a noise per run of {}",
        how_picked(spec, experiments), spec.fallback, spec.max, examples);
}

}  // namespace ncclsweep::inline plan
