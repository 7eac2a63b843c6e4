// Whole-sweep table formats: JSON (everything), CSV (experiment x metric), markdown.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "results/export/exports.hpp"
#include "results/query/what_if.hpp"

namespace ncclsweep::results::exports {
namespace {

using nlohmann::ordered_json;

ordered_json object_of(const std::vector<Assignment>& pairs) {
    ordered_json out = ordered_json::object();
    for (const auto& [name, value] : pairs) out[name] = value;
    return out;
}

ordered_json optional_number(const std::optional<double>& value) {
    return value && std::isfinite(*value) ? ordered_json(*value) : ordered_json(nullptr);
}

ordered_json number(double value) {
    return std::isfinite(value) ? ordered_json(value) : ordered_json(nullptr);
}

ordered_json experiment_json(const SweepData& sweep, const StoredExperiment& stored) {
    const Experiment& e = stored.experiment;
    const ExperimentOutcome& o = stored.outcome;
    ordered_json j;
    j["id"] = e.id;
    j["key"] = e.key;
    j["canonical"] = e.canonical;
    j["defaults"] = e.defaults;
    j["params"] = object_of(e.params);
    j["env"] = object_of(e.env);
    j["workload"] = object_of(e.workload);
    j["argv"] = e.argv;
    j["status"] = std::string(to_string(o.status));
    j["failure_class"] = o.failure_class.empty() ? ordered_json(nullptr) : ordered_json(o.failure_class);
    j["diagnosis_line"] =
        o.diagnosis.empty() ? ordered_json(nullptr) : ordered_json(one_line_diagnosis(o.diagnosis));
    j["diagnosis"] = o.diagnosis.empty() ? ordered_json(nullptr) : ordered_json(o.diagnosis);
    j["detected_after_s"] = optional_number(o.detected_after_s);
    j["effective_nccl"] = o.effective_nccl;
    j["collective_times"] =
        o.collective_times.empty() ? ordered_json(nullptr) : ordered_json(o.collective_times);
    j["what_if"] = is_what_if(stored);
    j["timings"] = {{"init_s", optional_number(o.timings.init_s)},
                    {"capture_s", optional_number(o.timings.capture_s)},
                    {"ready_s", optional_number(o.timings.ready_s)},
                    {"measure_s", optional_number(o.timings.measure_s)},
                    {"total_s", optional_number(o.timings.total_s)}};
    j["exit_code"] = o.exit_code ? ordered_json(*o.exit_code) : ordered_json(nullptr);
    j["exit_signal"] = o.exit_signal ? ordered_json(*o.exit_signal) : ordered_json(nullptr);
    j["attempts"] = stored.attempts;
    j["started_at"] = stored.started_at;
    j["ended_at"] = stored.ended_at;
    ordered_json metrics = ordered_json::object();
    for (const auto& name : metric_names(sweep)) {
        auto s = metric_stats(stored, name);
        if (!s) continue;
        metrics[name] = {{"n", s->n},
                         {"median", number(s->median)},
                         {"low", number(s->low)},
                         {"high", number(s->high)},
                         {"interval", s->interval_is_ci ? "ci95" : "min_max"},
                         {"values", metric_values(stored, name)}};
    }
    j["metrics"] = std::move(metrics);
    ordered_json samples = ordered_json::array();
    for (const auto& sample : o.samples)
        samples.push_back(
            {{"repeat", sample.repeat}, {"metric", sample.metric}, {"value", number(sample.value)}});
    j["samples"] = std::move(samples);
    ordered_json events = ordered_json::array();
    for (const auto& event : o.events)
        events.push_back({{"level", std::string(to_string(event.level))},
                          {"code", event.code},
                          {"message", event.message},
                          {"at", event.at}});
    j["events"] = std::move(events);
    return j;
}

/// RFC 4180 field: quoted when it holds a comma, quote, CR or LF (or leading/trailing space).
std::string csv_field(std::string_view text) {
    bool quote = text.find_first_of(",\"\r\n") != std::string_view::npos ||
                 (!text.empty() && (text.front() == ' ' || text.back() == ' '));
    if (!quote) return std::string(text);
    std::string out = "\"";
    for (char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

void csv_row(std::string& out, const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i) out += ',';
        out += csv_field(fields[i]);
    }
    out += "\r\n";
}

/// Markdown table cell: one line, pipes and markup escaped, HTML inert.
std::string md_cell(std::string_view text) {
    std::string cleaned = clean_text(text, false);
    std::string out;
    for (char c : cleaned) {
        if (append_entity(out, c, Quotes::keep)) continue;  // HTML inert
        switch (c) {
            case '|':
            case '\\':
            case '`':
            case '*':
            case '_':
            case '[':
            case ']':
            case '#':
            case '~':
                out += '\\';
                out += c;
                break;
            default:
                out += c;
        }
    }
    return out;
}

}  // namespace

std::string to_json(const SweepData& sweep) {
    const SweepInfo& s = sweep.info;
    ordered_json j;
    j["format"] = "ncclsweep.export";
    j["version"] = 1;
    j["sweep"] = {
        {"id", s.id},
        {"name", s.record.name},
        {"tag", s.record.tag.empty() ? ordered_json(nullptr) : ordered_json(s.record.tag)},
        {"target", s.record.target},
        {"state", std::string(to_string(s.state))},
        {"end_reason", s.end_reason},
        {"created_at", s.created_at},
        {"started_at", s.started_at},
        {"ended_at", s.ended_at},
        {"repeats", s.record.repeats},
        {"backend", s.record.backend.empty() ? ordered_json(nullptr) : ordered_json(s.record.backend)},
        {"simulated", s.record.backend == "sim"},
        {"tool_version", s.record.tool_version},
        {"spec_path", s.record.spec_path},
        {"spec_hash", s.record.spec_hash},
        {"uuid", s.record.uuid},
        {"inherited_env",
         s.record.inherited_known ? object_of(s.record.inherited_env) : ordered_json(nullptr)},
        {"counts",
         {{"ok", s.counts.ok},
          {"failed", s.counts.failed},
          {"timed_out", s.counts.timed_out},
          {"infra_error", s.counts.infra_error},
          {"skipped", s.counts.skipped},
          {"pruned", s.counts.pruned},
          {"dropped", s.counts.dropped},
          {"pending", s.counts.pending},
          {"running", s.counts.running}}}};
    j["metrics"] = metric_names(sweep);
    ordered_json experiments = ordered_json::array();
    for (const auto& stored : sweep.experiments) experiments.push_back(experiment_json(sweep, stored));
    j["experiments"] = std::move(experiments);
    return j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

std::string to_csv(const SweepData& sweep) {
    std::vector<std::string> params;
    for (const auto& stored : sweep.experiments)
        for (const auto& [name, value] : stored.experiment.params)
            if (std::find(params.begin(), params.end(), name) == params.end()) params.push_back(name);
    std::vector<std::string> header = {"sweep_id", "sweep", "exp_id", "key"};
    for (const auto& name : params) header.push_back("param:" + name);
    for (const char* column : {"status", "failure_class", "diagnosis", "collective_times", "what_if",
                               "metric", "n", "median", "low", "high", "interval", "min", "max", "simulated"})
        header.push_back(column);
    std::string out;
    csv_row(out, header);
    const auto metrics = metric_names(sweep);
    // Every row says whether tpverify's sim backend modelled its numbers (nothing ran on GPUs).
    const std::string simulated = sweep.info.record.backend == "sim" ? "yes" : "no";
    for (const auto& stored : sweep.experiments) {
        std::vector<std::string> base = {std::to_string(sweep.info.id), sweep.info.record.name,
                                         std::to_string(stored.experiment.id), stored.experiment.key};
        for (const auto& name : params) base.push_back(parameter(stored, name).value_or(""));
        base.push_back(std::string(to_string(stored.outcome.status)));
        base.push_back(stored.outcome.failure_class);
        base.push_back(one_line_diagnosis(stored.outcome.diagnosis));
        base.push_back(stored.outcome.collective_times);
        base.push_back(is_what_if(stored) ? "yes" : "no");
        bool any = false;
        for (const auto& metric : metrics) {
            auto s = metric_stats(stored, metric);
            if (!s) continue;
            any = true;
            auto values = metric_values(stored, metric);
            auto [lo, hi] = std::minmax_element(values.begin(), values.end());
            auto row = base;
            for (const auto& field :
                 {metric, std::to_string(s->n), format_number(s->median), format_number(s->low),
                  format_number(s->high), std::string(s->interval_is_ci ? "ci95" : "min_max"),
                  format_number(*lo), format_number(*hi), simulated})
                row.push_back(field);
            csv_row(out, row);
        }
        if (!any) {
            base.resize(base.size() + 8);
            base.push_back(simulated);
            csv_row(out, base);
        }
    }
    return out;
}

std::string to_markdown(const SweepData& sweep, std::string_view metric) {
    const auto axes = varying_parameters(sweep);
    std::string out = fmt::format("### Sweep {}: {}\n\n", sweep.info.id, md_cell(sweep.info.record.name));
    if (auto note = simulated_note(sweep.info.record.backend); !note.empty()) out += "**" + note + "**\n\n";
    bool any_small = false;
    for (const auto& stored : sweep.experiments)
        if (auto s = metric_stats(stored, metric); s && !s->interval_is_ci) any_small = true;
    out += "| id |";
    for (const auto& axis : axes) out += " " + md_cell(axis) + " |";
    out += fmt::format(" status | {} median | interval | n | times | failure |\n|---:|", md_cell(metric));
    for (std::size_t i = 0; i < axes.size(); ++i) out += "---|";
    out += "---|---:|---|---:|---|---|\n";
    bool labelled = false;
    for (const auto& stored : sweep.experiments) {
        out += fmt::format("| {} |", stored.experiment.id);
        for (const auto& axis : axes) out += " " + md_cell(parameter(stored, axis).value_or("")) + " |";
        out += " " + std::string(to_string(stored.outcome.status)) + " |";
        if (auto s = metric_stats(stored, metric)) {
            // Six significant digits for people; json/csv keep every digit.
            out += fmt::format(" {:.6g} | {}{:.6g} – {:.6g} | {} |", s->median, s->interval_is_ci ? "" : "*",
                               s->low, s->high, s->n);
        } else {
            out += " | | |";
        }
        const std::string times = stored.outcome.collective_times + (is_what_if(stored) ? " what-if" : "");
        labelled = labelled || !times.empty();
        out += " " + md_cell(times.empty() ? "-" : times) + " |";
        std::string failure;
        if (!stored.outcome.failure_class.empty())
            failure = "**" + md_cell(stored.outcome.failure_class) +
                      "**: " + md_cell(one_line_diagnosis(stored.outcome.diagnosis));
        out += " " + failure + " |\n";
    }
    out += "\nInterval: 95% confidence interval of the median";
    if (any_small) out += "; * = min – max (fewer than 6 samples, no 95% interval exists)";
    out += ".\n";
    if (labelled)
        out +=
            "Times: what the collective times rest on: calibrated (measured for NCCL's choice), relative (a "
            "measured choice scaled by the model), modelled (NCCL's estimate); what-if: needs a server "
            "change "
            "(the fused all-reduce), never the recommendation.\n";
    return out;
}

}  // namespace ncclsweep::results::exports
