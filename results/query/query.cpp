// Sweep tables for `ncclsweep results show|best`: summaries per experiment and metric.
#include "results/query/query.hpp"
#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "core/plan/plan.hpp"
#include "core/spec/metric.hpp"
#include "core/spec/spec_parser.hpp"
#include "results/query/what_if.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::results {
namespace {

std::string join(std::span<const std::string> names) {
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
    return out.empty() ? "(none)" : out;
}

// Better-first order of two medians; NaN never wins.
bool better(double a, double b, stats::Direction direction) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
    return direction == stats::Direction::higher_is_better ? a > b : a < b;
}

}  // namespace

stats::Direction metric_direction(std::string_view m) {
    return default_direction(m);
}

MetricChoice resolve_metric(const MetricChoice& choice, const SweepRecord& sweep) {
    MetricChoice out = choice;
    if (!choice.direction_given) out.direction = definition_of(choice.name, sweep.metrics).better;
    return out;
}

int ExperimentRow::settings_that_count() const {
    int count = 0;
    for (const auto& [name, value] : params)
        if (!value.empty() && value != "unset" && std::find(inert.begin(), inert.end(), name) == inert.end())
            ++count;
    return count;
}

std::string_view direction_text(stats::Direction direction) {
    return direction == stats::Direction::higher_is_better ? "higher is better" : "lower is better";
}

const MetricSummary* ExperimentRow::metric(std::string_view name) const {
    for (const auto& m : metrics)
        if (m.metric == name) return &m;
    return nullptr;
}

std::vector<std::string> varying_parameters(std::span<const std::vector<Assignment>* const> params) {
    std::vector<std::string> order;
    std::unordered_map<std::string, std::pair<std::string, std::size_t>> first;  // name -> (value, count)
    std::unordered_map<std::string, bool> differs;
    for (const auto* list : params) {
        for (const auto& [name, value] : *list) {
            auto [it, inserted] = first.try_emplace(name, value, 0);
            if (inserted)
                order.push_back(name);
            else if (it->second.first != value)
                differs[name] = true;
            ++it->second.second;
        }
    }
    std::vector<std::string> varying;
    for (const auto& name : order)
        if (params.size() == 1 || differs[name] || first[name].second != params.size())
            varying.push_back(name);
    return varying;
}

std::vector<std::string> varying_parameters(std::span<const StoredExperiment> experiments) {
    std::vector<const std::vector<Assignment>*> params;
    params.reserve(experiments.size());
    for (const auto& stored : experiments) params.push_back(&stored.experiment.params);
    return varying_parameters(params);
}

std::vector<std::string> default_columns(std::span<const std::string> recorded) {
    std::vector<std::string> columns;
    for (const char* preferred : {"tok_s", "verify_us_p50"})
        if (std::find(recorded.begin(), recorded.end(), preferred) != recorded.end())
            columns.emplace_back(preferred);
    if (columns.empty())
        columns.assign(recorded.begin(), recorded.begin() + static_cast<std::ptrdiff_t>(
                                                                std::min<std::size_t>(3, recorded.size())));
    return columns;
}

namespace {

// Fills `row` from `stored`; Source is `const StoredExperiment&` (copy) or `StoredExperiment&` (move).
template <typename Source>
ExperimentRow make_row(Source&& stored, const std::vector<std::string>& varying,
                       std::set<std::string>& all_metrics, const Spec* spec,
                       std::unordered_map<std::string, std::vector<std::string>>& inert_cache) {
    constexpr bool k_move = !std::is_const_v<std::remove_reference_t<Source>>;
    auto take = [](auto& value) -> decltype(auto) {
        if constexpr (k_move)
            return std::move(value);
        else
            return static_cast<const std::remove_reference_t<decltype(value)>&>(value);
    };
    ExperimentRow row;
    auto& e = stored.experiment;
    row.exp_id = e.id;
    if (spec) {
        // Many points share an environment and workload: judge each distinct one once.
        std::string cache_key;
        for (const auto* list : {&e.env, &e.workload}) {
            for (const auto& [name, value] : *list)
                cache_key.append(name).append("=").append(value).append("\x1f");
            cache_key.append("\x1e");
        }
        auto found = inert_cache.find(cache_key);
        if (found == inert_cache.end())
            found = inert_cache.emplace(cache_key, inert_settings(*spec, e)).first;
        row.inert = found->second;
    }
    for (const auto& name : varying) {
        auto it = std::find_if(e.params.begin(), e.params.end(),
                               [&](const Assignment& a) { return a.first == name; });
        row.changed.emplace_back(name, it == e.params.end() ? std::string("-") : it->second);
    }
    row.key = take(e.key);
    row.canonical = take(e.canonical);
    row.params = take(e.params);
    row.status = stored.outcome.status;
    row.failure_class = take(stored.outcome.failure_class);
    row.diagnosis = first_line(stored.outcome.diagnosis, 160);
    row.effective_nccl = take(stored.outcome.effective_nccl);
    row.collective_times = take(stored.outcome.collective_times);
    row.what_if = is_what_if(stored);
    row.attempts = stored.attempts;
    row.total_s = stored.outcome.timings.total_s;
    // Samples come in (repeat, metric) order: group them by metric, keeping repeat order.
    for (const auto& sample : stored.outcome.samples) {
        auto it = std::find_if(row.metrics.begin(), row.metrics.end(),
                               [&](const MetricSummary& m) { return m.metric == sample.metric; });
        if (it == row.metrics.end()) {
            row.metrics.push_back(MetricSummary{sample.metric, {}, {}});
            it = std::prev(row.metrics.end());
        }
        it->values.push_back(sample.value);
    }
    std::sort(row.metrics.begin(), row.metrics.end(),
              [](const MetricSummary& a, const MetricSummary& b) { return a.metric < b.metric; });
    for (auto& m : row.metrics) {
        m.summary = stats::summarize(m.values);
        all_metrics.insert(m.metric);
    }
    return row;
}

template <typename Experiments>
SweepTable make_table(const SweepInfo& sweep, Experiments&& experiments) {
    SweepTable table;
    table.sweep = sweep;
    table.varying = varying_parameters(std::span<const StoredExperiment>(experiments));
    table.rows.reserve(experiments.size());
    std::set<std::string> all_metrics;
    // The spec it ran (stored with it) tells which settings NCCL ignores at its message sizes;
    // a spec this build cannot read any more leaves that unknown (nothing counted as inert).
    auto spec = parse_spec(sweep.record.spec_text, sweep.record.spec_path);
    const Spec* spec_ptr = spec ? &*spec : nullptr;
    std::unordered_map<std::string, std::vector<std::string>> inert_cache;
    for (auto& stored : experiments)
        table.rows.push_back(make_row(stored, table.varying, all_metrics, spec_ptr, inert_cache));
    table.metrics.assign(all_metrics.begin(), all_metrics.end());
    table.columns = default_columns(table.metrics);
    return table;
}

}  // namespace

SweepTable build_sweep_table(const SweepInfo& sweep, std::span<const StoredExperiment> experiments) {
    return make_table(sweep, experiments);
}

SweepTable build_sweep_table(const SweepInfo& sweep, std::vector<StoredExperiment>&& experiments) {
    return make_table(sweep, experiments);
}

Result<SweepTable> load_sweep_table(Store& store, std::string_view ref) {
    auto sweep = store.load_sweep(ref);
    if (!sweep) return sweep.error();
    return build_sweep_table(sweep->info, std::move(sweep->experiments));
}

Result<void> require_metric(const SweepTable& table, std::string_view metric) {
    if (std::find(table.metrics.begin(), table.metrics.end(), metric) != table.metrics.end())
        return success();
    return Error::bad_input(fmt::format("metric '{}' is not recorded in sweep {} ('{}'); recorded: {}",
                                        metric, table.sweep.id, table.sweep.record.name,
                                        join(table.metrics)));
}

Result<void> sort_rows(SweepTable& table, const MetricChoice& metric) {
    if (auto ok = require_metric(table, metric.name); !ok) return ok;
    auto median_of = [&](const ExperimentRow& row) {
        const MetricSummary* m = row.metric(metric.name);
        return m ? m->summary.median : std::nan("");
    };
    std::stable_sort(table.rows.begin(), table.rows.end(),
                     [&](const ExperimentRow& a, const ExperimentRow& b) {
                         return better(median_of(a), median_of(b), metric.direction);
                     });
    auto& columns = table.columns;
    columns.erase(std::remove(columns.begin(), columns.end(), metric.name), columns.end());
    columns.insert(columns.begin(), metric.name);
    return success();
}

std::vector<std::string> inert_settings_of(const SweepInfo& sweep, const Experiment& experiment) {
    auto spec = parse_spec(sweep.record.spec_text, sweep.record.spec_path);
    if (!spec) return {};
    return inert_settings(*spec, experiment);
}

std::string point_backend(const SweepInfo& sweep, const Experiment& experiment) {
    for (const auto& [name, value] : experiment.workload)
        if (name == "backend" && value != "auto") return value;
    return sweep.record.backend;
}

std::string simulated_note(std::string_view backend) {
    return backend == "sim" ? "SIMULATED: tpverify's sim backend modelled these numbers; nothing ran on GPUs"
                            : std::string();
}

bool indistinguishable(const MetricSummary& point, const MetricSummary& top, const MetricChoice& metric,
                       double alpha, double threshold, bool* by_threshold) {
    const stats::CompareOptions options{alpha, threshold, metric.direction};
    auto c = stats::compare(point.values, top.values, options);
    if (!c) return false;
    switch (c->verdict) {
        case stats::Verdict::no_change:
            return true;
        case stats::Verdict::insufficient_samples:
            if (std::abs(c->delta) <= threshold) {
                if (by_threshold) *by_threshold = true;
                return true;
            }
            if (by_threshold) *by_threshold = true;
            return false;
        case stats::Verdict::improvement:
        case stats::Verdict::regression:
            return false;
    }
    return false;
}

Result<BestExperiment> best_experiment(const SweepTable& table, const MetricChoice& metric) {
    if (auto ok = require_metric(table, metric.name); !ok) return ok.error();
    std::vector<const ExperimentRow*> ranked;
    std::optional<ExperimentRow> what_if;  // a server change, not a setting: beside the ranking
    for (const auto& row : table.rows) {
        const MetricSummary* m = row.metric(metric.name);
        if (row.status != ExperimentStatus::ok || !m || m->values.empty()) continue;
        if (!row.what_if)
            ranked.push_back(&row);
        else if (!what_if ||
                 better(m->summary.median, what_if->metric(metric.name)->summary.median, metric.direction))
            what_if = row;
    }
    if (ranked.empty())
        return Error::bad_input(fmt::format(
            "sweep {} ('{}') has no ok experiment with metric '{}' ({} ok of {}{}); "
            "`ncclsweep results show {}` lists what failed and why",
            table.sweep.id, table.sweep.record.name, metric.name, table.sweep.counts.ok, table.rows.size(),
            what_if ? ", what-if points such as the fused all-reduce are never recommended" : "",
            table.sweep.id));
    auto median_of = [&](const ExperimentRow* row) { return row->metric(metric.name)->summary.median; };
    std::stable_sort(ranked.begin(), ranked.end(), [&](const ExperimentRow* a, const ExperimentRow* b) {
        return better(median_of(a), median_of(b), metric.direction);
    });
    BestExperiment result;
    result.sweep = table.sweep;
    result.metric = metric;
    result.what_if = std::move(what_if);
    result.candidates = ranked.size();
    const ExperimentRow* top = ranked.front();
    result.top_id = top->exp_id;
    std::vector<const ExperimentRow*> group{top};
    const ExperimentRow* runner_up = nullptr;
    for (std::size_t i = 1; i < ranked.size(); ++i) {
        if (indistinguishable(*ranked[i]->metric(metric.name), *top->metric(metric.name), metric,
                              k_default_alpha, k_default_threshold, &result.decided_by_threshold))
            group.push_back(ranked[i]);
        else if (!runner_up)
            runner_up = ranked[i];
    }
    // The simplest of the group: fewest settings that count; then the better median (group order).
    const ExperimentRow* simplest = *std::min_element(
        group.begin(), group.end(),
        [](const auto* a, const auto* b) { return a->settings_that_count() < b->settings_that_count(); });
    result.best = *simplest;
    for (const auto* row : group) result.tie_group.push_back(*row);
    if (runner_up) {
        result.runner_up = *runner_up;
        const stats::CompareOptions options{k_default_alpha, k_default_threshold, metric.direction};
        auto margin =
            stats::compare(runner_up->metric(metric.name)->values, top->metric(metric.name)->values, options);
        if (margin) result.margin = std::move(*margin);
    }
    return result;
}

}  // namespace ncclsweep::results
