// Shared pieces of the exporters: metrics, the best point, labels, dispatch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/log.hpp"
#include "core/text.hpp"
#include "results/export.hpp"
#include "results/store.hpp"

namespace ncclsweep::results::exports {

Result<Format> parse_format(std::string_view text) {
    if (text == "json") return Format::json;
    if (text == "csv") return Format::csv;
    if (text == "md" || text == "markdown") return Format::markdown;
    if (text == "junit") return Format::junit;
    if (text == "sitecustomize") return Format::sitecustomize;
    if (text == "env") return Format::env;
    if (text == "nccl-tuner") return Format::nccl_tuner;
    if (text == "tuner-profile") return Format::tuner_profile;
    return Error::bad_input(
        fmt::format("--format {}: unknown format; use json, csv, md, junit, sitecustomize, env, "
                    "tuner-profile or nccl-tuner",
                    clean_text(text, false)));
}

bool is_point_format(Format format) {
    return format == Format::sitecustomize || format == Format::env || format == Format::nccl_tuner ||
           format == Format::tuner_profile;
}

std::vector<double> metric_values(const StoredExperiment& experiment, std::string_view metric) {
    std::vector<double> values;
    for (const auto& sample : experiment.outcome.samples)
        if (sample.metric == metric) values.push_back(sample.value);
    return values;
}

std::vector<std::string> metric_names(const SweepData& sweep) {
    std::vector<std::string> names;
    for (const auto& experiment : sweep.experiments)
        for (const auto& sample : experiment.outcome.samples)
            if (std::find(names.begin(), names.end(), sample.metric) == names.end())
                names.push_back(sample.metric);
    return names;
}

stats::Direction metric_direction(std::string_view metric) {
    std::string lower(metric);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    auto has = [&](std::string_view part) { return lower.find(part) != std::string::npos; };
    bool ends_seconds = lower.size() >= 8 && lower.compare(lower.size() - 8, 8, "_seconds") == 0;
    if (has("latency") || has("_us") || has("_ms") || has("_ns") || has("time") || ends_seconds)
        return stats::Direction::lower_is_better;
    return stats::Direction::higher_is_better;
}

std::optional<MetricStats> metric_stats(const StoredExperiment& experiment, std::string_view metric) {
    auto values = metric_values(experiment, metric);
    if (values.empty()) return std::nullopt;
    MetricStats out;
    out.n = values.size();
    out.median = stats::median(values);
    if (auto ci = stats::median_confidence_interval(values)) {
        out.low = ci->low;
        out.high = ci->high;
        out.interval_is_ci = true;
    } else {
        auto [lo, hi] = std::minmax_element(values.begin(), values.end());
        out.low = *lo;
        out.high = *hi;
    }
    return out;
}

Result<const StoredExperiment*> best_experiment(const SweepData& sweep, std::string_view metric) {
    const bool lower = metric_direction(metric) == stats::Direction::lower_is_better;
    const StoredExperiment* best = nullptr;
    double best_median = 0;
    for (const auto& experiment : sweep.experiments) {
        if (experiment.outcome.status != ExperimentStatus::ok) continue;
        auto s = metric_stats(experiment, metric);
        if (!s || std::isnan(s->median)) continue;
        if (!best || (lower ? s->median < best_median : s->median > best_median)) {
            best = &experiment;
            best_median = s->median;
        }
    }
    if (best) return best;
    auto names = metric_names(sweep);
    std::string known = names.empty() ? std::string("it has no measured samples at all")
                                      : "metrics present: " + fmt::format("{}", fmt::join(names, ", "));
    return Error::bad_input(fmt::format(
        "sweep {} ({}): no ok experiment measured '{}' ({}); pick one with --metric "
        "or name a point with --experiment ID",
        sweep.info.id, clean_text(sweep.info.record.name, false), clean_text(metric, false), known));
}

Result<const StoredExperiment*> find_experiment(const SweepData& sweep, int id) {
    for (const auto& experiment : sweep.experiments)
        if (experiment.experiment.id == id) return &experiment;
    return Error::bad_input(
        fmt::format("--experiment {}: sweep {} has experiments 1..{}; `ncclsweep results show {}` "
                    "lists them",
                    id, sweep.info.id, sweep.experiments.size(), sweep.info.id));
}

std::optional<std::string> parameter(const StoredExperiment& experiment, std::string_view name) {
    std::optional<std::string> value;
    for (const auto& [n, v] : experiment.experiment.params)
        if (n == name) value = v;
    return value;
}

std::vector<std::string> varying_parameters(const SweepData& sweep) {
    std::vector<std::string> all;
    for (const auto& experiment : sweep.experiments)
        for (const auto& [name, value] : experiment.experiment.params)
            if (std::find(all.begin(), all.end(), name) == all.end()) all.push_back(name);
    std::vector<std::string> varying;
    for (const auto& name : all) {
        std::optional<std::optional<std::string>> first;
        for (const auto& experiment : sweep.experiments) {
            auto value = parameter(experiment, name);
            if (!first)
                first = value;
            else if (*first != value) {
                varying.push_back(name);
                break;
            }
        }
    }
    return varying.empty() ? all : varying;
}

std::string params_label(const StoredExperiment& experiment, const std::vector<std::string>& names) {
    std::string out;
    auto add = [&](const std::string& name, const std::string& value) {
        if (!out.empty()) out += ' ';
        out += name + "=" + value;
    };
    if (names.empty()) {
        for (const auto& [name, value] : experiment.experiment.params) add(name, value);
    } else {
        for (const auto& name : names)
            if (auto value = parameter(experiment, name)) add(name, *value);
    }
    return out;
}

std::string one_line_diagnosis(std::string_view diagnosis) { return clean_text(first_line(diagnosis, 197), false); }

Result<std::string> export_sweep(const SweepData& sweep, const ExportRequest& request) {
    if (!is_point_format(request.format)) {
        if (request.best || request.experiment)
            return Error::bad_input(
                "--best/--experiment choose one point; they apply only to --format "
                "sitecustomize, env, tuner-profile or nccl-tuner (the table formats export every "
                "experiment)");
        switch (request.format) {
            case Format::json:
                return to_json(sweep);
            case Format::csv:
                return to_csv(sweep);
            case Format::markdown:
                return to_markdown(sweep, request.metric);
            default:
                return to_junit(sweep);
        }
    }
    if (request.best && request.experiment)
        return Error::bad_input("--best and --experiment both choose the point; give only one");
    if (!request.best && !request.experiment)
        return Error::bad_input(
            "this format exports one point: add --best [--metric tok_s] or --experiment ID");
    // --best for a profile is a winner per message size, not one point (results/export_tuner.cpp).
    if (request.format == Format::tuner_profile && request.best)
        return to_tuner_profile_best(sweep, request.metric);
    auto point = request.experiment ? find_experiment(sweep, *request.experiment)
                                    : best_experiment(sweep, request.metric);
    if (!point) return point.error();
    const StoredExperiment& experiment = **point;
    if (request.experiment && experiment.outcome.status != ExperimentStatus::ok)
        NCCLSWEEP_LOG(warning, "experiment {} of sweep {} is {}, not ok: exporting its settings anyway",
                      experiment.experiment.id, sweep.info.id, to_string(experiment.outcome.status));
    switch (request.format) {
        case Format::sitecustomize:
            return to_sitecustomize(sweep, experiment);
        case Format::env:
            return to_env_file(sweep, experiment);
        case Format::tuner_profile:
            return to_tuner_profile(sweep, experiment, request.metric);
        default:
            NCCLSWEEP_LOG(warning, "{}", k_example_plugin_warning);
            return to_nccl_tuner(sweep, experiment);
    }
}

}  // namespace ncclsweep::results::exports
