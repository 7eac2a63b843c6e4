// JSON layout of `results list|show|best` and `diff`: versioned documents (the "schema" field),
// keys in a fixed order, NaN written as null. docs/results.md describes every field.
#include <nlohmann/json.hpp>

#include <cmath>

#include "results/print/printers_detail.hpp"
#include "results/query/what_if.hpp"

namespace ncclsweep::results::detail {
namespace {

using Json = nlohmann::ordered_json;

// Invalid UTF-8 (diagnoses keep the log's bytes) becomes U+FFFD instead of throwing.
std::string dump(const Json& j) {
    return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Json number(double value) {
    return std::isfinite(value) ? Json(value) : Json(nullptr);
}
Json text_or_null(const std::string& text) {
    return text.empty() ? Json(nullptr) : Json(text);
}

Json assignments(const std::vector<Assignment>& values) {
    Json object = Json::object();
    for (const auto& [name, value] : values) object[name] = value;
    return object;
}

Json sweep_json(const SweepInfo& s) {
    const StatusCounts& c = s.counts;
    return Json{
        {"id", s.id},
        {"name", s.record.name},
        {"tag", text_or_null(s.record.tag)},
        {"target", s.record.target},
        {"state", to_string(s.state)},
        {"runner_alive", s.runner_alive ? Json(*s.runner_alive) : Json(nullptr)},
        {"end_reason", text_or_null(s.end_reason)},
        {"created_at", s.created_at},
        {"started_at", s.started_at},
        {"ended_at", text_or_null(s.ended_at)},
        {"repeats", s.record.repeats},
        {"resumes", s.resumes},
        {"spec_path", s.record.spec_path},
        {"backend", text_or_null(s.record.backend)},
        {"simulated", s.record.backend == "sim"},
        {"inherited_env", s.record.inherited_known ? assignments(s.record.inherited_env) : Json(nullptr)},
        {"counts",
         {{"total", c.total()},
          {"ok", c.ok},
          {"failed", c.failed},
          {"timed_out", c.timed_out},
          {"infra_error", c.infra_error},
          {"skipped", c.skipped},
          {"pruned", c.pruned},
          {"dropped", c.dropped},
          {"pending", c.pending},
          {"running", c.running}}}};
}

Json summary_json(const stats::Summary& s, const std::vector<double>* values) {
    Json j{{"n", s.n}, {"median", number(s.median)}};
    if (s.ci)
        j["ci95"] = Json{
            {"low", number(s.ci->low)}, {"high", number(s.ci->high)}, {"coverage", number(s.ci->coverage)}};
    else
        j["ci95"] = nullptr;
    j["min"] = number(s.min);
    j["max"] = number(s.max);
    j["mean"] = number(s.mean);
    if (values) j["values"] = *values;
    return j;
}

Json row_json(const ExperimentRow& row) {
    Json metrics = Json::object();
    for (const auto& m : row.metrics) metrics[m.metric] = summary_json(m.summary, &m.values);
    return Json{{"id", row.exp_id},
                {"key", row.key},
                {"canonical", row.canonical},
                {"defaults", row.defaults},
                {"params", assignments(row.params)},
                {"changed", assignments(row.changed)},
                {"status", to_string(row.status)},
                {"failure_class", text_or_null(row.failure_class)},
                {"diagnosis", text_or_null(row.diagnosis)},
                {"effective_nccl", text_or_null(row.effective_nccl)},
                {"collective_times", text_or_null(row.collective_times)},
                {"what_if", row.what_if},
                {"attempts", row.attempts},
                {"total_s", row.total_s ? number(*row.total_s) : Json(nullptr)},
                {"metrics", metrics}};
}

Json settings_json(const PointSettings& settings) {
    Json list = Json::array();
    for (const auto& s : settings.settings)
        list.push_back(Json{{"name", s.name},
                            {"value", s.value},
                            {"role", s.role == SettingRole::change        ? "change"
                                     : s.role == SettingRole::nccl_choice ? "nccl_choice"
                                                                          : "inert"},
                            {"deploy", s.role == SettingRole::change ? Json(s.deploy_value) : Json(nullptr)},
                            {"why", s.why}});
    return list;
}

/// What every point format of `export` deploys for this point: the same variables, the same values.
Json deploy_json(const PointSettings& settings) {
    Json env = Json::object();
    for (const auto& s : settings.settings)
        if (s.role == SettingRole::change) env[s.name] = s.deploy_value;
    return Json{{"env", env},
                {"left_to_nccl", settings.names(SettingRole::nccl_choice)},
                {"inert", settings.names(SettingRole::inert)},
                {"notes", settings.notes}};
}

Json metric_json(const MetricChoice& m) {
    return Json{{"name", m.name},
                {"direction",
                 m.direction == stats::Direction::higher_is_better ? "higher_is_better" : "lower_is_better"}};
}

Json comparison_json(const stats::Comparison& c) {
    return Json{{"base", summary_json(c.base, nullptr)},
                {"new", summary_json(c.candidate, nullptr)},
                {"delta", number(c.delta)},
                {"p_value", number(c.p_value)},
                {"exact", c.test.exact},
                {"u", number(c.test.u)},
                {"verdict", stats::verdict_name(c.verdict)},
                {"reason", c.reason}};
}

Json unmatched_json(const UnmatchedExperiment& u) {
    return Json{
        {"id", u.exp_id}, {"key", u.key}, {"canonical", u.canonical}, {"status", to_string(u.status)}};
}

Json experiment_diff_json(const ExperimentDiff& e) {
    Json metrics = Json::object();
    for (const auto& m : e.metrics)
        if (m.comparison) {
            Json one = comparison_json(*m.comparison);
            one["verdict"] = stats::verdict_name(m.verdict);  // after Holm's correction
            one["p_adjusted"] = number(m.p_adjusted);
            one["noise"] = number(m.noise);
            // The smallest relative change caught in 90% of nights; null: none (or no noise estimate).
            one["detectable"] = number(m.detectable);
            metrics[m.metric.name] = std::move(one);
        }
    return Json{{"key", e.key},
                {"canonical", e.canonical},
                {"base_id", e.base_id},
                {"new_id", e.new_id},
                {"changed", assignments(e.changed)},
                {"base_status", to_string(e.base_status)},
                {"new_status", to_string(e.new_status)},
                {"base_failure_class", text_or_null(e.base_failure_class)},
                {"new_failure_class", text_or_null(e.new_failure_class)},
                {"new_diagnosis", text_or_null(e.new_diagnosis)},
                {"status_verdict", stats::verdict_name(e.status_verdict)},
                {"status_note", text_or_null(e.status_note)},
                {"verdict", stats::verdict_name(e.verdict())},
                {"metrics", metrics}};
}

}  // namespace

void JsonPrinter::print_sweeps(std::span<const SweepInfo> sweeps) {
    Json list = Json::array();
    for (const auto& s : sweeps) list.push_back(sweep_json(s));
    m_out.write(dump(Json{{"schema", k_sweeps_schema}, {"sweeps", list}}));
}

void JsonPrinter::print_table(const SweepTable& table) {
    Json rows = Json::array();
    for (const auto& row : table.rows) rows.push_back(row_json(row));
    m_out.write(dump(Json{{"schema", k_sweep_schema},
                          {"sweep", sweep_json(table.sweep)},
                          {"varying", table.varying},
                          {"metrics", table.metrics},
                          {"experiments", rows}}));
}

void JsonPrinter::print_best(const BestExperiment& best) {
    Json j{{"schema", k_best_schema},
           {"sweep", sweep_json(best.sweep)},
           {"metric", metric_json(best.metric)},
           {"candidates", best.candidates},
           {"best", row_json(best.best)},
           {"top_id", best.top_id},
           {"tie", best.tie()},
           {"tie_group",
            [&] {
                Json ids = Json::array();
                for (const auto& row : best.tie_group) ids.push_back(row.exp_id);
                return ids;
            }()},
           {"decided_by_threshold", best.decided_by_threshold},
           {"tie_changed", best.tie_changed},
           {"recommendation", recommendation_text(best)},
           {"tie_rule", text_or_null(tie_text(best))},
           {"defaults", best.defaults ? row_json(*best.defaults) : Json(nullptr)},
           {"defaults_missing", text_or_null(best.defaults_missing)},
           {"versus_defaults", best.versus_defaults ? comparison_json(*best.versus_defaults) : Json(nullptr)},
           {"gain_over_defaults",
            best.gain_over_defaults() ? number(*best.gain_over_defaults()) : Json(nullptr)},
           {"settings", settings_json(best.settings)},
           {"settings_changed", best.settings.changed()},
           {"settings_set", best.settings.set()},
           {"inert", best.settings.names(SettingRole::inert)},
           {"deploy", deploy_json(best.settings)},
           {"runner_up", best.runner_up ? row_json(*best.runner_up) : Json(nullptr)},
           {"margin", best.margin ? comparison_json(*best.margin) : Json(nullptr)},
           {"caveat", text_or_null(recommendation_caveat(best.best))},
           {"what_if", best.what_if ? row_json(*best.what_if) : Json(nullptr)},
           {"what_if_line", text_or_null(what_if_line(best).value_or(""))}};
    m_out.write(dump(j));
}

void JsonPrinter::print_diff(const SweepDiff& diff) {
    Json metrics = Json::array();
    for (const auto& m : diff.options.metrics) metrics.push_back(metric_json(m));
    Json experiments = Json::array();
    for (const auto& e : diff.experiments) experiments.push_back(experiment_diff_json(e));
    Json base_only = Json::array(), new_only = Json::array();
    for (const auto& u : diff.only_in_base) base_only.push_back(unmatched_json(u));
    for (const auto& u : diff.only_in_new) new_only.push_back(unmatched_json(u));
    Json geomeans = Json::object();
    for (const auto& g : diff.geomeans)
        geomeans[g.metric.name] =
            Json{{"ratio", number(g.ratio)}, {"delta", number(g.ratio - 1)}, {"experiments", g.experiments}};
    const DiffCounts& c = diff.counts;
    Json j{{"schema", k_diff_schema},
           {"base", sweep_json(diff.base)},
           {"new", sweep_json(diff.candidate)},
           {"options",
            {{"alpha", diff.options.alpha}, {"threshold", diff.options.threshold}, {"metrics", metrics}}},
           {"varying", diff.varying},
           {"settings_changed", diff.settings_changed},
           {"experiments", experiments},
           {"only_in_base", base_only},
           {"only_in_new", new_only},
           {"geomeans", geomeans},
           {"counts",
            {{"regressions", c.regressions},
             {"improvements", c.improvements},
             {"unchanged", c.unchanged},
             {"insufficient_samples", c.insufficient}}},
           {"false_alarms",
            {{"method", "holm"},
             {"alpha", diff.options.alpha},
             {"comparisons", diff.power.comparisons},
             {"noise", number(diff.power.noise)},
             {"repeats_for_5_percent",
              diff.power.repeats_for_5_percent ? Json(diff.power.repeats_for_5_percent) : Json(nullptr)}}},
           {"regression", diff.has_regression()}};
    m_out.write(dump(j));
}

}  // namespace ncclsweep::results::detail
