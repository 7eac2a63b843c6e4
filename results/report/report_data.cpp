// What the HTML report draws, computed from the stored sweeps (no formatting here).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "core/plan/baseline.hpp"
#include "results/query/what_if.hpp"
#include "results/report/report_html.hpp"

namespace ncclsweep::results::report {
namespace {

using exports::SweepData;

bool is_failure(ExperimentStatus status) {
    return status == ExperimentStatus::failed || status == ExperimentStatus::timed_out ||
           status == ExperimentStatus::infra_error;
}

std::string class_of(const StoredExperiment& e) {
    if (!e.outcome.failure_class.empty()) return e.outcome.failure_class;
    return std::string(to_string(e.outcome.status));
}

/// The value of parameter `name` of `e` on the heat map: its own, or "(default)" for an NCCL
/// variable NCCL's defaults point leaves to NCCL; nullopt when the point does not have it.
std::optional<std::string> axis_value(const StoredExperiment& e, const std::string& name) {
    if (auto value = exports::parameter(e, name)) return value;
    if (e.experiment.defaults && is_nccl_variable(name)) return std::string("(default)");
    return std::nullopt;
}

/// The parameters that take more than one value, ordered by the share of the variance of
/// log(median) over the ok experiments that their values explain (between-group sum of squares
/// over the total, eta squared), largest first; ties keep the sweep's axis order.
std::vector<std::pair<std::string, double>> rank_by_variance(const SweepData& sweep,
                                                             const std::string& metric) {
    std::vector<std::pair<const StoredExperiment*, double>> measured;
    for (const auto& e : sweep.experiments) {
        if (e.outcome.status != ExperimentStatus::ok) continue;
        auto s = exports::metric_stats(e, metric);
        if (s && s->median > 0 && std::isfinite(s->median)) measured.emplace_back(&e, std::log(s->median));
    }
    double mean = 0;
    for (const auto& m : measured) mean += m.second;
    if (!measured.empty()) mean /= static_cast<double>(measured.size());
    double total = 0;
    for (const auto& m : measured) total += (m.second - mean) * (m.second - mean);
    std::vector<std::pair<std::string, double>> ranked;
    for (const auto& name : exports::varying_parameters(sweep)) {
        std::map<std::string, std::pair<double, int>> groups;  // value -> (sum, count)
        std::set<std::optional<std::string>> values;
        for (const auto& e : sweep.experiments) values.insert(exports::parameter(e, name));
        if (values.size() < 2) continue;
        for (const auto& [e, v] : measured) {
            auto& g = groups[exports::parameter(*e, name).value_or("")];
            g.first += v;
            ++g.second;
        }
        double between = 0;
        for (const auto& [value, g] : groups) {
            const double group_mean = g.first / g.second;
            between += g.second * (group_mean - mean) * (group_mean - mean);
        }
        ranked.emplace_back(name, total > 0 ? between / total : 0.0);
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return ranked;
}

Result<std::optional<Heatmap>> make_heatmap(const SweepData& sweep, const ReportOptions& options,
                                            std::string& note) {
    std::vector<std::string> all;
    for (const auto& e : sweep.experiments)
        for (const auto& [name, value] : e.experiment.params)
            if (std::find(all.begin(), all.end(), name) == all.end()) all.push_back(name);
    std::vector<std::string> axes = options.heatmap_axes;
    if (!axes.empty()) {
        if (axes.size() != 2 || axes[0] == axes[1])
            return Error::bad_input(
                "--heatmap takes two different parameter names, e.g. --heatmap NCCL_ALGO,tokens");
        for (const auto& axis : axes)
            if (std::find(all.begin(), all.end(), axis) == all.end())
                return Error::bad_input(
                    fmt::format("--heatmap: '{}' is not a parameter of sweep {}; its parameters: {}",
                                exports::clean_text(axis, false), sweep.info.id,
                                all.empty() ? std::string("none") : fmt::format("{}", fmt::join(all, ", "))));
    } else {
        // The two parameters that place the most experiments (NCCL's defaults point places on an
        // NCCL axis as "(default)"), then the most variance explained: a parameter only an
        // include point sets would leave every other point off the map.
        auto ranked = rank_by_variance(sweep, options.metric);
        auto placed = [&](const std::string& name) {
            return std::count_if(sweep.experiments.begin(), sweep.experiments.end(),
                                 [&](const StoredExperiment& e) { return axis_value(e, name).has_value(); });
        };
        std::stable_sort(ranked.begin(), ranked.end(),
                         [&](const auto& a, const auto& b) { return placed(a.first) > placed(b.first); });
        for (const auto& [name, share] : ranked) axes.push_back(name);
        if (axes.size() < 2) {
            note = "No heat map: fewer than two parameters take more than one value in this sweep.";
            return std::optional<Heatmap>();
        }
        axes.resize(2);
    }
    Heatmap map;
    map.x_axis = axes[0];
    map.y_axis = axes[1];
    if (options.heatmap_axes.empty()) {
        map.chosen_by_variance = true;
        for (const auto& [name, share] : rank_by_variance(sweep, options.metric)) {
            if (name == map.x_axis) map.x_share = share;
            if (name == map.y_axis) map.y_share = share;
        }
    }
    auto index_of = [](std::vector<std::string>& values, const std::string& v) {
        auto it = std::find(values.begin(), values.end(), v);
        if (it != values.end()) return static_cast<std::size_t>(it - values.begin());
        values.push_back(v);
        return values.size() - 1;
    };
    struct Placed {
        std::size_t x, y;
        const StoredExperiment* e;
    };
    std::vector<Placed> placed;
    const bool lower_better =
        exports::metric_direction(sweep, options.metric) == stats::Direction::lower_is_better;
    for (const auto& e : sweep.experiments) {
        if (e.outcome.status == ExperimentStatus::ok)
            if (auto s = exports::metric_stats(e, options.metric);
                s && std::isfinite(s->median) &&
                (!map.reference ||
                 (lower_better ? s->median < *map.reference : s->median > *map.reference))) {
                map.reference = s->median;
                map.reference_id = e.experiment.id;
            }
        auto x = axis_value(e, map.x_axis);
        auto y = axis_value(e, map.y_axis);
        if (!x || !y) {
            auto s = exports::metric_stats(e, options.metric);
            map.off_map.push_back(fmt::format(
                "experiment {} ({}): {}", e.experiment.id, exports::params_label(e),
                e.outcome.status == ExperimentStatus::ok && s ? exports::format_number(s->median)
                                                              : std::string(to_string(e.outcome.status))));
            continue;
        }
        placed.push_back({index_of(map.x_values, *x), index_of(map.y_values, *y), &e});
    }
    map.cells.assign(map.x_values.size() * map.y_values.size(), {});
    const bool lower = exports::metric_direction(sweep, options.metric) == stats::Direction::lower_is_better;
    std::vector<std::map<std::string, int>> classes(map.cells.size());
    for (const auto& p : placed) {
        HeatCell& cell = map.cells[p.y * map.x_values.size() + p.x];
        ++cell.experiments;
        if (cell.experiments > 1) map.aggregated = true;
        if (is_failure(p.e->outcome.status)) {
            ++cell.failed;
            ++classes[p.y * map.x_values.size() + p.x][class_of(*p.e)];
        }
        if (p.e->outcome.status != ExperimentStatus::ok) continue;
        auto s = exports::metric_stats(*p.e, options.metric);
        if (!s || std::isnan(s->median)) continue;
        if (!cell.value || (lower ? s->median < *cell.value : s->median > *cell.value))
            cell.value = s->median;
    }
    for (std::size_t i = 0; i < map.cells.size(); ++i) {
        int most = 0;
        for (const auto& [name, count] : classes[i])
            if (count > most) {
                most = count;
                map.cells[i].failure_class = name;
            }
    }
    return std::optional<Heatmap>(std::move(map));
}

void add_deltas(ReportData& data, const SweepData& sweep, const SweepData& base, const std::string& metric) {
    std::unordered_map<std::string, const StoredExperiment*> base_by_key;
    for (const auto& e : base.experiments) base_by_key.emplace(e.experiment.key, &e);
    std::unordered_map<std::string, bool> matched;
    const auto axes = exports::varying_parameters(sweep);
    // diff's own test and threshold, so a colour here is the verdict `ncclsweep diff` gives.
    stats::CompareOptions compare_options{k_default_alpha, k_default_threshold,
                                          exports::metric_direction(sweep, metric)};
    for (const auto& e : sweep.experiments) {
        auto it = base_by_key.find(e.experiment.key);
        if (it == base_by_key.end()) {
            ++data.only_in_new;
            continue;
        }
        matched[e.experiment.key] = true;
        const StoredExperiment& b = *it->second;
        DeltaRow row;
        row.id = e.experiment.id;
        row.base_id = b.experiment.id;
        row.label = exports::params_label(e, axes);
        row.base_status = std::string(to_string(b.outcome.status));
        row.new_status = std::string(to_string(e.outcome.status));
        auto base_values = exports::metric_values(b, metric);
        auto new_values = exports::metric_values(e, metric);
        if (!base_values.empty()) row.base_median = stats::median(base_values);
        if (!new_values.empty()) row.new_median = stats::median(new_values);
        const bool base_ok = b.outcome.status == ExperimentStatus::ok;
        const bool new_ok = e.outcome.status == ExperimentStatus::ok;
        if (base_ok && !new_ok) {
            row.verdict = "regression: now " + class_of(e);
        } else if (!base_ok && new_ok) {
            row.verdict = "improvement: was " + class_of(b);
        } else if (row.base_median && row.new_median) {
            auto compared = stats::compare(base_values, new_values, compare_options);
            if (compared) {
                row.delta = compared->delta;
                row.verdict = std::string(stats::verdict_name(compared->verdict));
            } else {
                row.verdict = "not comparable";
            }
        } else {
            row.verdict = base_ok ? "no samples" : "failed in both";
        }
        data.deltas.push_back(std::move(row));
    }
    for (const auto& b : base.experiments)
        if (!matched.count(b.experiment.key)) ++data.only_in_base;
}

}  // namespace

Result<ReportData> build_report(const SweepData& sweep, const SweepData* base, const ReportOptions& options) {
    ReportData data;
    data.sweep = &sweep;
    data.base = base;
    data.metric = options.metric;
    data.direction = exports::metric_direction(sweep, options.metric);
    const auto axes = exports::varying_parameters(sweep);
    const StoredExperiment* best = nullptr;
    if (auto found = exports::best_point(sweep, options.metric)) {
        data.recommendation = recommendation_text(*found);
        data.tie = tie_text(*found);
        if (auto point = exports::find_experiment(sweep, found->best.exp_id)) best = *point;
        if (auto note = collective_times_note(found->best.collective_times, found->best.what_if);
            !note.empty())
            data.caveat = fmt::format("The recommendation, experiment {}, is NOT calibrated: {}.",
                                      found->best.exp_id, note);
        data.what_if = what_if_line(*found).value_or("");
    }
    for (const auto& e : sweep.experiments) {
        Bar bar;
        bar.id = e.experiment.id;
        bar.label = exports::params_label(e, axes);
        bar.status = std::string(to_string(e.outcome.status));
        // Failures are red with their class; the search's decisions are not failures: a dropped
        // point is drawn grey with the samples it had, a pruned one is named (it never ran).
        if (is_failure(e.outcome.status) || e.outcome.status == ExperimentStatus::skipped)
            bar.failure_class = class_of(e);
        bar.dropped = e.outcome.status == ExperimentStatus::dropped;
        if (e.outcome.status == ExperimentStatus::ok || bar.dropped)
            bar.stats = exports::metric_stats(e, options.metric);
        bar.best = &e == best;
        bar.collective_times = e.outcome.collective_times;
        bar.what_if = is_what_if(e);
        if (!bar.collective_times.empty() || bar.what_if)  // every point says what it rests on
            bar.label += "  [" + (bar.collective_times.empty() ? std::string("-") : bar.collective_times) +
                         (bar.what_if ? ", what-if" : "") + "]";
        data.bars.push_back(std::move(bar));
        if (e.outcome.status == ExperimentStatus::pruned || e.outcome.status == ExperimentStatus::dropped)
            data.left_out.push_back({e.experiment.id, exports::params_label(e, axes),
                                     std::string(to_string(e.outcome.status)),
                                     exports::one_line_diagnosis(e.outcome.diagnosis)});
        if (is_failure(e.outcome.status)) {
            std::string cls = class_of(e);
            auto group = std::find_if(data.failures.begin(), data.failures.end(),
                                      [&](const FailureGroup& g) { return g.failure_class == cls; });
            if (group == data.failures.end())
                group = data.failures.insert(data.failures.end(), FailureGroup{cls, {}});
            group->entries.push_back({e.experiment.id, exports::params_label(e, axes),
                                      std::string(to_string(e.outcome.status)),
                                      exports::one_line_diagnosis(e.outcome.diagnosis)});
        }
    }
    // Best first, then experiments without a value, then failures (each group in id order).
    const bool lower = data.direction == stats::Direction::lower_is_better;
    auto rank = [](const Bar& b) { return b.stats ? 0 : b.failure_class.empty() ? 1 : 2; };
    std::stable_sort(data.bars.begin(), data.bars.end(), [&](const Bar& a, const Bar& b) {
        if (rank(a) != rank(b)) return rank(a) < rank(b);
        if (!a.stats) return false;
        return lower ? a.stats->median < b.stats->median : a.stats->median > b.stats->median;
    });
    if (data.bars.size() > options.max_bars) {
        // The best measured ones are drawn; the failures are all in the failure list.
        data.bars_omitted = data.bars.size() - options.max_bars;
        data.bars.resize(options.max_bars);
    }
    std::sort(data.failures.begin(), data.failures.end(), [](const FailureGroup& a, const FailureGroup& b) {
        return a.entries.size() > b.entries.size();
    });
    auto map = make_heatmap(sweep, options, data.heatmap_note);
    if (!map) return map.error();
    data.heatmap = std::move(*map);
    if (base) add_deltas(data, sweep, *base, options.metric);
    return data;
}

}  // namespace ncclsweep::results::report
