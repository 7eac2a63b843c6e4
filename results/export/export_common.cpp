// Shared pieces of the exporters: metrics, the best point, labels, dispatch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "core/text.hpp"
#include "results/export/exports.hpp"
#include "results/query/what_if.hpp"
#include "results/store/store.hpp"

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

stats::Direction metric_direction(const SweepData& sweep, std::string_view metric) {
    auto choice = parse_metric_choice(metric);
    if (!choice) return default_direction(metric);
    return resolve_metric(*choice, sweep.info.record).direction;
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

Result<BestExperiment> best_point(const SweepData& sweep, std::string_view metric) {
    auto choice = parse_metric_choice(metric);
    if (!choice) return choice.error();
    SweepTable table = build_sweep_table(sweep.info, std::span<const StoredExperiment>(sweep.experiments));
    auto best = results::best_experiment(table, resolve_metric(*choice, sweep.info.record));
    if (best) return best;
    auto names = metric_names(sweep);
    std::string known = names.empty() ? std::string("it has no measured samples at all")
                                      : "metrics present: " + fmt::format("{}", fmt::join(names, ", "));
    return Error::bad_input(fmt::format(
        "sweep {} ({}): no ok experiment measured '{}' ({}); pick one with --metric "
        "or name a point with --experiment ID",
        sweep.info.id, clean_text(sweep.info.record.name, false), clean_text(choice->name, false), known));
}

Result<const StoredExperiment*> best_experiment(const SweepData& sweep, std::string_view metric) {
    auto best = best_point(sweep, metric);
    if (!best) return best.error();
    return find_experiment(sweep, best->best.exp_id);
}

namespace {

/// The NCCL version the host preflight found ("" when unknown).
std::string host_nccl_version(const SweepData& sweep) {
    auto j = nlohmann::json::parse(sweep.info.record.host_preflight, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("nccl_version") || !j["nccl_version"].is_string())
        return {};
    return j["nccl_version"].get<std::string>();
}

std::string assignments_text(const std::vector<SettingJudgement>& settings, SettingRole role) {
    std::string out;
    for (const auto& s : settings)
        if (s.role == role) out += (out.empty() ? "" : " ") + s.name + "=" + s.value;
    return out;
}

std::string point_header(const SweepData& sweep, const StoredExperiment& point, const PointSettings& settings,
                         const BestExperiment* best, std::string_view metric_text) {
    std::vector<std::string> lines;
    const auto& e = point.experiment;
    lines.push_back(fmt::format("ncclsweep: experiment {} of sweep {} ('{}'), key {}{}", e.id, sweep.info.id,
                                sweep.info.record.name, e.key, e.defaults ? " (NCCL's defaults point)" : ""));
    if (point.outcome.status != ExperimentStatus::ok) {
        const std::string diagnosis = one_line_diagnosis(point.outcome.diagnosis);
        lines.push_back(
            fmt::format("{}: experiment {} is {}{}{}; exported with --force",
                        point.outcome.status == ExperimentStatus::dropped ? "NOTE" : "FAILED", e.id,
                        to_string(point.outcome.status),
                        point.outcome.failure_class.empty() ? "" : " (" + point.outcome.failure_class + ")",
                        diagnosis.empty() ? "" : ": " + diagnosis));
    }
    const std::string backend = point_backend(sweep.info, e);
    if (!backend.empty())
        lines.push_back(backend == "sim" ? "data: " + simulated_note(backend)
                                         : "data: measured (backend " + backend + ")");
    if (auto nccl = host_nccl_version(sweep); !nccl.empty()) lines.push_back("NCCL on the host: " + nccl);
    std::string workload;
    for (const auto& [name, value] : e.workload)
        workload += (workload.empty() ? "" : " ") + name + "=" + value;
    if (!workload.empty())
        lines.push_back("workload parameters (set them on your server; they are not NCCL variables): " +
                        workload);
    // The workload also ran with these: a deployment without them is not what was measured.
    if (!sweep.info.record.inherited_env.empty()) {
        std::string names;
        for (const auto& [name, value] : sweep.info.record.inherited_env)
            names += (names.empty() ? "" : " ") + name + "=" + value;
        lines.push_back(
            "inherited: the workload also ran with these from its environment, not set by the spec (not in "
            "this file; set them where you deploy, or check they do not matter): " +
            names);
    } else if (!sweep.info.record.inherited_known) {
        lines.push_back(
            "inherited: not recorded (sweep recorded before ncclsweep looked at its environment)");
    }
    if (auto own = assignments_text(settings.settings, SettingRole::nccl_choice); !own.empty())
        lines.push_back(
            "left to NCCL (its own choice at its defaults" +
            (settings.defaults_id ? fmt::format(", experiment {}", *settings.defaults_id) : std::string()) +
            "): " + own);
    if (auto inert = assignments_text(settings.settings, SettingRole::inert); !inert.empty())
        lines.push_back(
            "left out as inert (same effective NCCL choice and no significant difference without "
            "them): " +
            inert);
    for (const auto& note : settings.notes) lines.push_back(note);
    auto choice = parse_metric_choice(metric_text);
    const std::string metric = best ? best->metric.name : choice ? choice->name : std::string(metric_text);
    if (auto s = metric_stats(point, metric)) {
        const MetricDefinition d = definition_of(metric, sweep.info.record.metrics);
        lines.push_back(
            fmt::format("evidence: {} median {}{} ({} {}..{}, n={}), {} is better", metric,
                        fmt::format("{:.6g}", s->median), d.unit.empty() ? "" : " " + d.unit,
                        s->interval_is_ci ? "95% CI" : "range", fmt::format("{:.6g}", s->low),
                        fmt::format("{:.6g}", s->high), s->n,
                        better_word(best ? best->metric.direction : metric_direction(sweep, metric))));
    }
    if (!point.outcome.collective_times.empty()) {
        const std::string note = collective_times_note(point.outcome.collective_times, is_what_if(point));
        lines.push_back(note.empty() ? "collective times: calibrated (measured for NCCL's choice)"
                                     : "collective times: NOT calibrated: " + note);
    }
    if (is_what_if(point))
        lines.push_back(
            "left out: this point ran the fused all-reduce, which no NCCL setting deploys (a what-if); this "
            "file "
            "carries its NCCL settings only, the server must run the fused kernel itself");
    if (best && best->what_if)
        if (auto line = what_if_line(*best)) lines.push_back("left out: " + *line);
    if (best) {
        lines.push_back("recommended: " + recommendation_text(*best));
        if (best->tie()) lines.push_back("tie: " + tie_text(*best));
        if (best->runner_up && best->margin)
            lines.push_back(fmt::format("margin over the runner-up (experiment {}): {:+.1f}% ({})",
                                        best->runner_up->exp_id, best->margin->delta * 100,
                                        stats::verdict_name(best->margin->verdict)));
        else
            lines.push_back("margin: no runner-up outside the tie group");
    }
    std::string out;
    for (const auto& line : lines) out += "# " + clean_text(line, false) + "\n";
    return out;
}

}  // namespace

StoredExperiment deployed_point(const StoredExperiment& point, const PointSettings& settings) {
    StoredExperiment out = point;
    auto& env = out.experiment.env;
    env.clear();
    for (const auto& [name, value] : point.experiment.env) {
        auto judged = std::find_if(settings.settings.begin(), settings.settings.end(),
                                   [&](const SettingJudgement& s) { return s.name == name; });
        if (judged == settings.settings.end())
            env.emplace_back(name, value);  // fixed by the spec, the same for every point
        else if (judged->role == SettingRole::change)
            env.emplace_back(name, judged->deploy_value);
    }
    return out;
}

namespace {

Result<void> refuse_unmeasured(const SweepData& sweep, const StoredExperiment& point, bool force) {
    const ExperimentStatus status = point.outcome.status;
    if (status == ExperimentStatus::ok || status == ExperimentStatus::dropped || force) {
        if (status != ExperimentStatus::ok)
            NCCLSWEEP_LOG(warning, "experiment {} of sweep {} is {}, not ok: exporting its settings anyway",
                          point.experiment.id, sweep.info.id, to_string(status));
        return success();
    }
    const std::string diagnosis = one_line_diagnosis(point.outcome.diagnosis);
    return Error::bad_input(fmt::format(
        "experiment {} of sweep {} is {}{}{}: these settings did not run to a result, so deploying them "
        "would deploy that; pick an ok point (`ncclsweep results best {}`), or pass --force to export it "
        "anyway (the file then says it failed)",
        point.experiment.id, sweep.info.id, to_string(status),
        point.outcome.failure_class.empty() ? "" : " (" + point.outcome.failure_class + ")",
        diagnosis.empty() ? "" : ": " + diagnosis, sweep.info.id));
}

}  // namespace

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

std::string one_line_diagnosis(std::string_view diagnosis) {
    return clean_text(first_line(diagnosis, 197), false);
}

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
    // --best for a profile is a winner per message size, not one point (results/export/export_tuner.cpp).
    if (request.format == Format::tuner_profile && request.best)
        return to_tuner_profile_best(sweep, request.metric);
    std::optional<BestExperiment> best;
    if (request.best) {
        auto found = best_point(sweep, request.metric);
        if (!found) return found.error();
        best = std::move(*found);
    }
    auto point = find_experiment(sweep, best ? best->best.exp_id : *request.experiment);
    if (!point) return point.error();
    if (auto measured = refuse_unmeasured(sweep, **point, request.force); !measured) return measured.error();
    // Every point format deploys the same settings, judged once (results/query/settings): those
    // that change what NCCL does, scoped; NCCL's own choices and inert ones left out and named.
    PointSettings settings;
    if (best) {
        settings = best->settings;
    } else {
        auto choice = parse_metric_choice(request.metric);
        if (!choice) return choice.error();
        SweepTable table =
            build_sweep_table(sweep.info, std::span<const StoredExperiment>(sweep.experiments));
        auto row = std::find_if(table.rows.begin(), table.rows.end(),
                                [&](const ExperimentRow& r) { return r.exp_id == (*point)->experiment.id; });
        settings = judge_settings(table, *row, resolve_metric(*choice, sweep.info.record));
    }
    const StoredExperiment experiment = deployed_point(**point, settings);
    const std::string header =
        point_header(sweep, **point, settings, best ? &*best : nullptr, request.metric);
    switch (request.format) {
        case Format::sitecustomize:
            return header + to_sitecustomize(sweep, experiment);
        case Format::env: {
            auto text = to_env_file(sweep, experiment);
            if (!text) return text.error();
            return header + *text;
        }
        case Format::tuner_profile: {
            auto text = to_tuner_profile(sweep, experiment, request.metric, &settings);
            if (!text) return text.error();
            return header + *text;
        }
        default: {
            NCCLSWEEP_LOG(warning, "{}", k_example_plugin_warning);
            auto text = to_nccl_tuner(sweep, experiment, &settings);
            if (!text) return text.error();
            return header + *text;
        }
    }
}

}  // namespace ncclsweep::results::exports
