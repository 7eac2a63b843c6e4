// Sweep tables for `ncclsweep results show|best`: summaries per experiment and metric.
#include "results/query.hpp"
#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "results/store.hpp"

namespace ncclsweep::results {
namespace {

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

// True when `unit` appears as a whole `_`-separated word of `name` (e.g. "_us" in "verify_us_p50").
bool has_word(std::string_view name, std::string_view unit) {
    for (std::size_t at = name.find(unit); at != std::string_view::npos; at = name.find(unit, at + 1)) {
        const std::size_t end = at + unit.size();
        if (end == name.size() || name[end] == '_') return true;
    }
    return false;
}

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
    if (contains(m, "tok_s") || contains(m, "per_s") || contains(m, "throughput") ||
        contains(m, "bandwidth") || contains(m, "gbps"))
        return stats::Direction::higher_is_better;
    if (has_word(m, "_us") || has_word(m, "_ms") || has_word(m, "_ns") ||
        (m.size() > 2 && m.ends_with("_s")) || contains(m, "latency") || contains(m, "ttft") ||
        contains(m, "itl") || contains(m, "tpot") || contains(m, "rsd"))
        return stats::Direction::lower_is_better;
    return stats::Direction::higher_is_better;
}

std::string_view direction_text(stats::Direction direction) {
    return direction == stats::Direction::higher_is_better ? "higher is better" : "lower is better";
}

Result<MetricChoice> parse_metric_choice(std::string_view text) {
    MetricChoice choice;
    std::string_view name = text;
    std::optional<stats::Direction> direction;
    if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
        name = text.substr(0, colon);
        const std::string_view suffix = text.substr(colon + 1);
        if (suffix == "higher")
            direction = stats::Direction::higher_is_better;
        else if (suffix == "lower")
            direction = stats::Direction::lower_is_better;
        else
            return Error::bad_input(
                fmt::format("metric '{}': unknown direction '{}'; write NAME, NAME:higher or "
                            "NAME:lower (e.g. verify_us_p50:lower)",
                            text, suffix));
    }
    if (name.empty())
        return Error::bad_input(
            fmt::format("metric '{}' has no name; write e.g. tok_s or verify_us_p50:lower", text));
    choice.name = std::string(name);
    choice.direction = direction.value_or(metric_direction(name));
    return choice;
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
                       std::set<std::string>& all_metrics) {
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
    for (auto& stored : experiments) table.rows.push_back(make_row(stored, table.varying, all_metrics));
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

Result<BestExperiment> best_experiment(const SweepTable& table, const MetricChoice& metric) {
    if (auto ok = require_metric(table, metric.name); !ok) return ok.error();
    const ExperimentRow* best = nullptr;
    const ExperimentRow* second = nullptr;
    std::size_t candidates = 0;
    for (const auto& row : table.rows) {
        const MetricSummary* m = row.metric(metric.name);
        if (row.status != ExperimentStatus::ok || !m || m->values.empty()) continue;
        ++candidates;
        if (!best || better(m->summary.median, best->metric(metric.name)->summary.median, metric.direction)) {
            second = best;
            best = &row;
        } else if (!second ||
                   better(m->summary.median, second->metric(metric.name)->summary.median, metric.direction)) {
            second = &row;
        }
    }
    if (!best)
        return Error::bad_input(
            fmt::format("sweep {} ('{}') has no ok experiment with metric '{}' ({} ok of {}); "
                        "`ncclsweep results show {}` lists what failed and why",
                        table.sweep.id, table.sweep.record.name, metric.name, table.sweep.counts.ok,
                        table.rows.size(), table.sweep.id));
    BestExperiment result;
    result.sweep = table.sweep;
    result.metric = metric;
    result.best = *best;
    result.candidates = candidates;
    if (second) {
        result.runner_up = *second;
        const stats::CompareOptions options{k_default_alpha, k_default_threshold, metric.direction};
        auto margin =
            stats::compare(second->metric(metric.name)->values, best->metric(metric.name)->values, options);
        if (margin) result.margin = std::move(*margin);
    }
    return result;
}

}  // namespace ncclsweep::results
