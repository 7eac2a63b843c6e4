// Table and markdown layouts of `ncclsweep diff`.
#include <fmt/format.h>

#include <cmath>

#include "core/text.hpp"
#include "results/print/printers_detail.hpp"

namespace ncclsweep::results::detail {
namespace {

std::string exp_cell(const ExperimentDiff& e) {
    if (e.base_id == e.new_id) return std::to_string(e.new_id);
    return fmt::format("{} (base {})", e.new_id, e.base_id);
}

void add_key_columns(Grid& g, const SweepDiff& diff) {
    g.column("exp", Align::right);
    for (const auto& name : diff.varying) g.column(name, Align::left, Cut::to_fit);
}

std::vector<std::string> key_cells(const ExperimentDiff& e) {
    std::vector<std::string> cells{exp_cell(e)};
    for (const auto& [name, value] : e.changed) cells.push_back(value);
    return cells;
}

// "3 (NCCL_PROTO=Simple fusion=on)": how the summary names an experiment.
std::string name_of(const ExperimentDiff& e) {
    std::vector<Assignment> set;
    for (const auto& a : e.changed)
        if (a.second != "-") set.push_back(a);
    const std::string params = format_assignments(set);
    return params.empty() ? fmt::format("experiment {}", e.new_id)
                          : fmt::format("experiment {} ({})", e.new_id, params);
}

// Why an experiment regressed, in a few words: the status change, else each regressed metric.
std::string regression_reason(const ExperimentDiff& e) {
    if (e.status_verdict == stats::Verdict::regression) {
        std::string text = e.status_note;
        if (!e.new_diagnosis.empty()) text += ": " + e.new_diagnosis;
        return text;
    }
    std::string text;
    for (const auto& m : e.metrics)
        if (m.verdict == stats::Verdict::regression && m.comparison)
            text += (text.empty() ? "" : ", ") + fmt::format("{} {} (p={})", m.metric.name,
                                                             format_delta(m.comparison->delta),
                                                             format_p(m.comparison->p_value));
    return text;
}

}  // namespace

namespace {

/// "≥4.1%" (the smallest change this comparison could catch), "none" when no p can pass, "-".
std::string detectable_text(double detectable) {
    if (std::isnan(detectable)) return "-";
    if (std::isinf(detectable)) return "none";
    return fmt::format("\u2265{:.2g}%", detectable * 100);
}

}  // namespace

void TextPrinter::print_diff(const SweepDiff& diff) {
    const SweepDiff& d = diff;
    heading(fmt::format("diff: base {} -> new {}", describe_sweep(d.base), describe_sweep(d.candidate)));
    line(fmt::format("base: {}, created {}, {}; new: {}, created {}, {}", describe_sweep(d.base),
                     d.base.created_at,
                     count_of(static_cast<std::size_t>(d.base.counts.total()), "experiment"),
                     describe_sweep(d.candidate), d.candidate.created_at,
                     count_of(static_cast<std::size_t>(d.candidate.counts.total()), "experiment")));
    if (d.settings_changed.empty())
        line("settings: the two sweeps ran with the same settings (only their points are compared below)");
    else
        line(fmt::format("settings that differ: {}", fmt::join(d.settings_changed, "; ")));
    if (!d.base.record.inherited_env.empty() &&
        d.base.record.inherited_env == d.candidate.record.inherited_env)
        line(fmt::format("inherited by both from the environment (not set by their specs): {}",
                         format_assignments(d.base.record.inherited_env)));
    line(fmt::format(
        "a change counts when the Mann-Whitney U test is significant after Holm's correction over the "
        "diff's {} comparisons (adjusted p <= {}: at most a {} chance of any false alarm in this diff) and "
        "|delta| > {}%; \"~\" = no such change; \"can see\" = the smallest change caught in 90% of "
        "nights at this noise and n",
        d.power.comparisons, stats::format_level(d.options.alpha), stats::format_level(d.options.alpha),
        stats::format_level(d.options.threshold * 100)));
    if (m_style == Style::table) m_out.write("\n");
    if (d.experiments.empty())
        line("no experiment matched by canonical key: the sweeps share no point (different specs?)");
    for (std::size_t i = 0; i < d.options.metrics.size(); ++i) diff_metric(d, i);
    diff_status(d);
    diff_one_side(d);
    diff_summary(d);
}

void TextPrinter::diff_metric(const SweepDiff& diff, std::size_t index) {
    const MetricChoice& metric = diff.options.metrics[index];
    Grid g;
    add_key_columns(g, diff);
    for (const char* h : {"base", "±", "new", "±", "delta", "p", "n", "can see"}) g.column(h, Align::right);
    g.column("verdict");
    std::string too_few_reason;  // the first one, named by its experiment
    bool few = false;            // a ± is a range (footnote)
    int compared = 0;
    for (const auto& e : diff.experiments) {
        if (index >= e.metrics.size() || !e.metrics[index].comparison) continue;
        ++compared;
        const MetricDiff& m = e.metrics[index];
        const stats::Comparison& c = *m.comparison;
        auto cells = key_cells(e);
        for (auto& cell : std::vector<std::string>{
                 format_value(c.base.median), format_spread_marked(c.base, few),
                 format_value(c.candidate.median), format_spread_marked(c.candidate, few),
                 format_delta(c.delta), format_p(c.p_value), fmt::format("{}+{}", c.base.n, c.candidate.n),
                 detectable_text(m.detectable), std::string(verdict_word(m.verdict))})
            cells.push_back(std::move(cell));
        if (m.verdict == stats::Verdict::insufficient_samples && too_few_reason.empty())
            too_few_reason = fmt::format("experiment {}: {}", e.new_id, c.reason);
        g.rows.push_back(std::move(cells));
    }
    if (index < diff.geomeans.size()) {
        const GeomeanSummary& gm = diff.geomeans[index];
        std::vector<std::string> cells{"geomean"};
        cells.resize(1 + diff.varying.size());
        for (auto& cell :
             std::vector<std::string>{"", "", "", "", std::isnan(gm.ratio) ? "-" : format_delta(gm.ratio - 1),
                                      "", fmt::format("{} exp", gm.experiments), "", ""})
            cells.push_back(std::move(cell));
        g.rows.push_back(std::move(cells));
    }
    heading(fmt::format("{} ({}): {} ok on both sides", metric_header(metric.name, diff.candidate.record),
                        direction_text(metric.direction),
                        count_of(static_cast<std::size_t>(compared), "experiment")));
    if (compared == 0) {
        line("nothing to compare: no experiment is ok on both sides");
        return;
    }
    grid(g);
    if (few) line(few_samples_footnote());
    if (!too_few_reason.empty()) {
        line("note: " + too_few_reason);
        if (m_style == Style::table) m_out.write("\n");
    }
}

void TextPrinter::diff_status(const SweepDiff& diff) {
    Grid g;
    add_key_columns(g, diff);
    g.column("base");
    g.column("new");
    g.column("verdict");
    g.column("diagnosis (new)", Align::left, Cut::to_fit);
    for (const auto& e : diff.experiments) {
        if (e.status_note.empty()) continue;
        auto cells = key_cells(e);
        std::string base(to_string(e.base_status)), now(to_string(e.new_status));
        if (!e.base_failure_class.empty()) base += " (" + e.base_failure_class + ")";
        if (!e.new_failure_class.empty()) now += " (" + e.new_failure_class + ")";
        cells.push_back(base);
        cells.push_back(now);
        cells.push_back(std::string(verdict_word(e.status_verdict)));
        cells.push_back(e.new_diagnosis);
        g.rows.push_back(std::move(cells));
    }
    if (g.rows.empty()) return;
    heading(fmt::format("status: {} not ok on both sides", count_of(g.rows.size(), "experiment")));
    grid(g);
}

void TextPrinter::diff_one_side(const SweepDiff& diff) {
    auto list = [&](const std::vector<UnmatchedExperiment>& points, std::string_view side) {
        if (points.empty()) return;
        heading(fmt::format("only in {} ({}): not compared", side, points.size()));
        Grid g;
        g.column("exp", Align::right);
        g.column("status");
        g.column("point", Align::left, Cut::to_fit);
        for (const auto& p : points)
            g.rows.push_back({std::to_string(p.exp_id), std::string(to_string(p.status)), p.canonical});
        grid(g);
    };
    list(diff.only_in_base, "base");
    list(diff.only_in_new, "new");
}

void TextPrinter::diff_summary(const SweepDiff& diff) {
    const DiffCounts& c = diff.counts;
    line(
        fmt::format("summary: {} regressed, {} improved, {} unchanged (~), {} with too few samples; "
                    "{} only in base, {} only in new",
                    c.regressions, c.improvements, c.unchanged, c.insufficient, diff.only_in_base.size(),
                    diff.only_in_new.size()));
    for (const auto& e : diff.experiments)
        if (e.verdict() == stats::Verdict::regression)
            line(fmt::format("{}regressed: {}: {}", m_style == Style::markdown ? "- " : "  ", name_of(e),
                             regression_reason(e)));
    if (diff.power.repeats_for_5_percent > 0)
        line(fmt::format(
            "to catch a 5% slowdown of one experiment in 90% of nights at the noisiest experiment's "
            "noise ({:.2g}% per run, small-sample corrected) with Holm over {} comparisons: repeats: {}",
            diff.power.noise * 100, diff.power.comparisons, diff.power.repeats_for_5_percent));
}

}  // namespace ncclsweep::results::detail
