// diff of two sweeps: match by canonical key, compare each metric with core/stats, and judge
// status changes. All statistics come from stats::compare and stats::geometric_mean.
#include "results/query/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <unordered_map>

#include "core/plan/plan_fingerprint.hpp"
#include "core/sweep/inherited_env.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::results {
namespace {

bool is_failure(ExperimentStatus s) {
    return s == ExperimentStatus::failed || s == ExperimentStatus::timed_out;
}

std::string status_with_class(ExperimentStatus status, const std::string& failure_class) {
    std::string text(to_string(status));
    if (!failure_class.empty()) text += " (" + failure_class + ")";
    return text;
}

/// The fixed settings of a stored sweep: its first experiment's workload args and env, minus
/// the parameters that vary between its experiments.
Result<FixedSettings> fixed_settings(Store& store, const SweepTable& table) {
    auto experiments = store.load_experiments(table.sweep.id);
    if (!experiments) return experiments.error();
    FixedSettings out;
    if (experiments->empty()) return out;
    const Experiment& first = experiments->front().experiment;
    auto varies = [&](const std::string& name) {
        return std::find(table.varying.begin(), table.varying.end(), name) != table.varying.end();
    };
    for (const auto& list : {first.workload, first.env})
        for (const auto& [name, value] : list)
            if (!varies(name)) out.emplace_back(name, value);
    return out;
}

bool recorded(const SweepTable& table, const std::string& metric) {
    return std::find(table.metrics.begin(), table.metrics.end(), metric) != table.metrics.end();
}

Result<void> check_options(const SweepTable& base, const SweepTable& candidate, const DiffOptions& options) {
    if (!(options.alpha > 0 && options.alpha < 1))
        return Error::bad_input(fmt::format(
            "--alpha {} is outside (0, 1); use a significance level such as 0.05", options.alpha));
    if (!std::isfinite(options.threshold) || options.threshold < 0)
        return Error::bad_input(
            fmt::format("--threshold {} is not a fraction >= 0; use e.g. 0.03 for 3%", options.threshold));
    if (options.metrics.empty())
        return Error::bad_input("no metric to compare; give --metric, e.g. --metric tok_s");
    const bool any_recorded = !base.metrics.empty() || !candidate.metrics.empty();
    for (const auto& metric : options.metrics) {
        if (!any_recorded || recorded(base, metric.name) || recorded(candidate, metric.name)) continue;
        std::vector<std::string> known = base.metrics;
        for (const auto& m : candidate.metrics)
            if (!recorded(base, m)) known.push_back(m);
        std::string list;
        for (const auto& m : known) list += (list.empty() ? "" : ", ") + m;
        return Error::bad_input(
            fmt::format("metric '{}' is recorded in neither sweep {} nor sweep {}; recorded: {}", metric.name,
                        base.sweep.id, candidate.sweep.id, list));
    }
    return success();
}

std::vector<Assignment> changed_values(const ExperimentRow& row, const std::vector<std::string>& names) {
    std::vector<Assignment> out;
    for (const auto& name : names) {
        auto it = std::find_if(row.params.begin(), row.params.end(),
                               [&](const Assignment& a) { return a.first == name; });
        out.emplace_back(name, it == row.params.end() ? std::string("-") : it->second);
    }
    return out;
}

void judge_status(ExperimentDiff& d, const ExperimentRow& base, const ExperimentRow& candidate) {
    const auto from = status_with_class(base.status, base.failure_class);
    const auto to = status_with_class(candidate.status, candidate.failure_class);
    if (base.status == ExperimentStatus::ok && candidate.status == ExperimentStatus::ok) return;
    if (base.status == ExperimentStatus::ok && is_failure(candidate.status)) {
        d.status_verdict = stats::Verdict::regression;
    } else if (is_failure(base.status) && candidate.status == ExperimentStatus::ok) {
        d.status_verdict = stats::Verdict::improvement;
    } else if (is_failure(base.status) && is_failure(candidate.status)) {
        d.status_verdict = stats::Verdict::no_change;
        d.status_note = from == to ? "still " + to : from + " -> " + to;
        return;
    } else {
        d.status_verdict = stats::Verdict::insufficient_samples;
        d.status_note = from + " -> " + to + " (not measured on both sides)";
        return;
    }
    d.status_note = from + " -> " + to;
}

Result<void> compare_metrics(ExperimentDiff& d, const ExperimentRow& base, const ExperimentRow& candidate,
                             const DiffOptions& options) {
    for (const auto& metric : options.metrics) {
        const MetricSummary* a = base.metric(metric.name);
        const MetricSummary* b = candidate.metric(metric.name);
        static const std::vector<double> k_none;
        stats::CompareOptions compare_options{options.alpha, options.threshold, metric.direction};
        auto comparison = stats::compare(a ? a->values : k_none, b ? b->values : k_none, compare_options);
        if (!comparison)
            return Error::bad_input(fmt::format("experiment {} ({}), metric '{}': {}", candidate.exp_id,
                                                candidate.canonical, metric.name,
                                                comparison.error().message));
        MetricDiff m;
        m.metric = metric;
        m.verdict = comparison->verdict;
        if (a && b && a->values.size() >= 2 && b->values.size() >= 2) {
            m.noise = std::max(stats::relative_noise(a->values), stats::relative_noise(b->values));
            m.noise_corrected = std::max(stats::relative_noise_corrected(a->values),
                                         stats::relative_noise_corrected(b->values));
        }
        m.comparison = std::move(*comparison);
        d.metrics.push_back(std::move(m));
    }
    return success();
}

void add_geomeans(SweepDiff& diff) {
    for (std::size_t i = 0; i < diff.options.metrics.size(); ++i) {
        std::vector<double> ratios;
        for (const auto& e : diff.experiments) {
            if (i >= e.metrics.size() || !e.metrics[i].comparison) continue;
            const auto& c = *e.metrics[i].comparison;
            if (c.base.n == 0 || c.candidate.n == 0) continue;
            const double ratio = c.candidate.median / c.base.median;
            if (std::isfinite(ratio) && ratio > 0) ratios.push_back(ratio);
        }
        GeomeanSummary g;
        g.metric = diff.options.metrics[i];
        g.experiments = ratios.size();
        g.ratio = stats::geometric_mean(ratios);
        diff.geomeans.push_back(g);
    }
}

/// Holm's correction over every comparison of the diff whose test could run: a change counts
/// only when its adjusted p <= alpha, so the chance of any false alarm in the whole diff stays
/// <= alpha. Then what each comparison could have seen, and the repeats a 5 % gate needs.
void control_false_alarms(SweepDiff& diff) {
    std::vector<MetricDiff*> tested;
    std::vector<double> p_values;
    for (auto& e : diff.experiments)
        for (auto& m : e.metrics)
            if (m.comparison && m.verdict != stats::Verdict::insufficient_samples &&
                std::isfinite(m.comparison->p_value)) {
                tested.push_back(&m);
                p_values.push_back(m.comparison->p_value);
            }
    const double alpha = diff.options.alpha;
    const auto adjusted = stats::holm_adjust(p_values);
    const std::size_t family = std::max<std::size_t>(1, tested.size());
    diff.power.comparisons = static_cast<int>(tested.size());
    for (std::size_t i = 0; i < tested.size(); ++i) {
        MetricDiff& m = *tested[i];
        m.p_adjusted = adjusted[i];
        if ((m.verdict == stats::Verdict::regression || m.verdict == stats::Verdict::improvement) &&
            !(adjusted[i] <= alpha)) {
            m.verdict = stats::Verdict::no_change;
            m.comparison->reason = fmt::format(
                "not significant after Holm's correction over {} comparisons (p={:.3g}, adjusted {:.3g} > "
                "alpha {})",
                tested.size(), m.comparison->p_value, adjusted[i], stats::format_level(alpha));
        }
    }
    // The repeats hint sizes for the noisiest experiment with the small-sample correction, the
    // same rule `repeats: auto` follows (docs/statistics.md "repeats: auto"), so both say one number.
    double noisiest = -1;
    for (auto& e : diff.experiments)
        for (std::size_t k = 0; k < e.metrics.size(); ++k) {
            MetricDiff& m = e.metrics[k];
            if (!m.comparison || !std::isfinite(m.noise)) continue;
            if (k == 0) noisiest = std::max(noisiest, m.noise_corrected);
            const double shift =
                stats::detectable_shift(m.comparison->base.n, m.comparison->candidate.n, m.noise,
                                        alpha / static_cast<double>(family), stats::k_gate_power);
            m.detectable = std::max(diff.options.threshold, shift);
        }
    if (noisiest >= 0) {
        diff.power.noise = noisiest;
        diff.power.repeats_for_5_percent =
            stats::samples_to_detect(std::max(stats::k_gate_shift, diff.options.threshold), diff.power.noise,
                                     alpha / static_cast<double>(family), stats::k_gate_power);
    }
}

UnmatchedExperiment unmatched(const ExperimentRow& row) {
    return {row.exp_id, row.key, row.canonical, row.status};
}

}  // namespace

stats::Verdict ExperimentDiff::verdict() const {
    auto any = [&](stats::Verdict v) {
        return status_verdict == v || std::any_of(metrics.begin(), metrics.end(),
                                                  [&](const MetricDiff& m) { return m.verdict == v; });
    };
    if (any(stats::Verdict::regression)) return stats::Verdict::regression;
    if (any(stats::Verdict::improvement)) return stats::Verdict::improvement;
    if (any(stats::Verdict::insufficient_samples)) return stats::Verdict::insufficient_samples;
    return stats::Verdict::no_change;
}

std::string_view verdict_word(stats::Verdict verdict) {
    switch (verdict) {
        case stats::Verdict::improvement:
            return "improvement";
        case stats::Verdict::regression:
            return "regression";
        case stats::Verdict::no_change:
            return "~";
        case stats::Verdict::insufficient_samples:
            return "too few samples";
    }
    return "~";
}

Result<SweepDiff> diff_tables(const SweepTable& base, const SweepTable& candidate,
                              const DiffOptions& requested) {
    // Which way is better comes from the sweeps' own metric definitions (the new sweep's).
    DiffOptions options = requested;
    for (auto& metric : options.metrics) metric = resolve_metric(metric, candidate.sweep.record);
    if (auto ok = check_options(base, candidate, options); !ok) return ok.error();
    SweepDiff diff;
    diff.base = base.sweep;
    diff.candidate = candidate.sweep;
    diff.options = options;

    // Base rows by key, in id order; a key repeated within a sweep pairs up in order.
    std::unordered_map<std::string, std::deque<std::size_t>> base_by_key;
    for (std::size_t i = 0; i < base.rows.size(); ++i) base_by_key[base.rows[i].key].push_back(i);
    std::vector<bool> base_matched(base.rows.size(), false);

    std::vector<const ExperimentRow*> new_rows;
    for (const auto& row : candidate.rows) new_rows.push_back(&row);
    std::stable_sort(new_rows.begin(), new_rows.end(),
                     [](const ExperimentRow* a, const ExperimentRow* b) { return a->exp_id < b->exp_id; });
    std::vector<std::pair<const ExperimentRow*, const ExperimentRow*>> pairs;  // (base, new)
    for (const ExperimentRow* row : new_rows) {
        auto it = base_by_key.find(row->key);
        if (it == base_by_key.end() || it->second.empty()) {
            diff.only_in_new.push_back(unmatched(*row));
            continue;
        }
        pairs.emplace_back(&base.rows[it->second.front()], row);
        base_matched[it->second.front()] = true;
        it->second.pop_front();
    }
    // The columns people see: parameters that differ among the matched experiments.
    std::vector<const std::vector<Assignment>*> matched_params;
    for (const auto& [old, row] : pairs) matched_params.push_back(&row->params);
    diff.varying = varying_parameters(matched_params);

    for (const auto& [old_row, row] : pairs) {
        const ExperimentRow& old = *old_row;
        ExperimentDiff d;
        d.key = row->key;
        d.canonical = row->canonical;
        d.changed = changed_values(*row, diff.varying);
        d.base_id = old.exp_id;
        d.new_id = row->exp_id;
        d.base_status = old.status;
        d.new_status = row->status;
        d.base_failure_class = old.failure_class;
        d.new_failure_class = row->failure_class;
        if (row->status != ExperimentStatus::ok) d.new_diagnosis = row->diagnosis;
        judge_status(d, old, *row);
        if (old.status == ExperimentStatus::ok && row->status == ExperimentStatus::ok)
            if (auto ok = compare_metrics(d, old, *row, options); !ok) return ok.error();
        diff.experiments.push_back(std::move(d));
    }
    control_false_alarms(diff);
    for (const auto& d : diff.experiments) {
        switch (d.verdict()) {
            case stats::Verdict::regression:
                ++diff.counts.regressions;
                break;
            case stats::Verdict::improvement:
                ++diff.counts.improvements;
                break;
            case stats::Verdict::insufficient_samples:
                ++diff.counts.insufficient;
                break;
            case stats::Verdict::no_change:
                ++diff.counts.unchanged;
                break;
        }
    }
    std::vector<const ExperimentRow*> leftovers;
    for (std::size_t i = 0; i < base.rows.size(); ++i)
        if (!base_matched[i]) leftovers.push_back(&base.rows[i]);
    std::stable_sort(leftovers.begin(), leftovers.end(),
                     [](const ExperimentRow* a, const ExperimentRow* b) { return a->exp_id < b->exp_id; });
    for (const ExperimentRow* row : leftovers) diff.only_in_base.push_back(unmatched(*row));
    add_geomeans(diff);
    return diff;
}

std::vector<std::string> setting_differences(const SweepRecord& base, const FixedSettings& before,
                                             const SweepRecord& candidate, const FixedSettings& after) {
    std::vector<std::string> out;
    auto show = [](const std::string& v) { return v.empty() ? std::string("(none)") : v; };
    auto find = [](const FixedSettings& list, const std::string& name) -> std::optional<std::string> {
        for (const auto& [n, v] : list)
            if (n == name) return v;
        return std::nullopt;
    };
    for (const auto& [name, value] : before) {
        auto now = find(after, name);
        if (!now || *now != value)
            out.push_back(fmt::format("{}: {} -> {}", name, value, now ? *now : "(not set)"));
    }
    for (const auto& [name, value] : after)
        if (!find(before, name)) out.push_back(fmt::format("{}: (not set) -> {}", name, value));
    // What each workload inherited besides its spec (recorded since schema v6).
    if (base.inherited_known && candidate.inherited_known)
        for (auto& sentence : inherited_differences(base.inherited_env, candidate.inherited_env))
            out.push_back(std::move(sentence));
    auto stored = PlanFingerprint::from_json(base.plan_fingerprint);
    auto now = PlanFingerprint::from_json(candidate.plan_fingerprint);
    if (stored && now)
        for (auto& sentence : fingerprint_differences(*stored, *now))
            if (sentence.rfind("--axis/--set:", 0) != 0) out.push_back(std::move(sentence));
    if (base.backend != candidate.backend)
        out.push_back(fmt::format("backend: {} -> {}", show(base.backend), show(candidate.backend)));
    if (base.repeats != candidate.repeats && !(stored && now && !stored->parts.empty()))
        out.push_back(fmt::format("repeats: {} -> {}", base.repeats, candidate.repeats));
    if (base.tool_version != candidate.tool_version)
        out.push_back(
            fmt::format("ncclsweep: {} -> {}", show(base.tool_version), show(candidate.tool_version)));
    return out;
}

Result<SweepDiff> diff_sweeps(Store& store, std::string_view base_ref, std::string_view new_ref,
                              const DiffOptions& options) {
    auto base = load_sweep_table(store, base_ref);
    if (!base) return Error{base.error().kind, fmt::format("BASE '{}': {}", base_ref, base.error().message)};
    auto candidate = load_sweep_table(store, new_ref);
    if (!candidate)
        return Error{candidate.error().kind, fmt::format("NEW '{}': {}", new_ref, candidate.error().message)};
    auto diff = diff_tables(*base, *candidate, options);
    if (!diff) return diff;
    auto base_fixed = fixed_settings(store, *base);
    auto new_fixed = fixed_settings(store, *candidate);
    if (base_fixed && new_fixed)
        diff->settings_changed =
            setting_differences(base->sweep.record, *base_fixed, candidate->sweep.record, *new_fixed);
    return diff;
}

}  // namespace ncclsweep::results
