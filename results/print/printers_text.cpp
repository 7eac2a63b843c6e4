// Table and markdown layouts of `results list|show|best` (the diff is in printers_text_diff.cpp).
#include <fmt/format.h>

#include <algorithm>

#include "core/text.hpp"
#include "results/print/printers_detail.hpp"
#include "results/query/what_if.hpp"

namespace ncclsweep::results::detail {
namespace {

std::string other_count(const StatusCounts& c) {
    const int other = c.pending + c.running + c.infra_error + c.skipped + c.pruned + c.dropped;
    return std::to_string(other);
}

std::string when(const SweepInfo& sweep) {
    return sweep.created_at.empty() ? "-" : sweep.created_at;
}

std::string counts_sentence(const SweepInfo& sweep) {
    const StatusCounts& c = sweep.counts;
    std::string text =
        fmt::format("{} ({} ok", count_of(static_cast<std::size_t>(c.total()), "experiment"), c.ok);
    if (c.failed) text += fmt::format(", {} failed", c.failed);
    if (c.timed_out) text += fmt::format(", {} timed out", c.timed_out);
    if (c.infra_error) text += ", " + count_of(static_cast<std::size_t>(c.infra_error), "infra error");
    if (c.skipped) text += fmt::format(", {} skipped", c.skipped);
    if (c.pruned) text += fmt::format(", {} pruned", c.pruned);
    if (c.dropped) text += fmt::format(", {} dropped", c.dropped);
    if (c.pending + c.running) text += fmt::format(", {} not run yet", c.pending + c.running);
    return text + ")";
}

// The status cell: "ok", "ok, relative, what-if" (what its collective times rest on, and a point
// that needs a server change), or "failed (graph_capture)".
std::string status_cell(const ExperimentRow& row) {
    std::string text(to_string(row.status));
    if (!row.failure_class.empty()) text += " (" + row.failure_class + ")";
    if (row.status == ExperimentStatus::ok && !row.collective_times.empty())
        text += ", " + row.collective_times;
    if (row.what_if) text += ", what-if";
    return text;
}

// The last cell: the diagnosis of a failure, else the effective NCCL config.
std::string note_cell(const ExperimentRow& row) {
    if (row.status != ExperimentStatus::ok) return row.diagnosis.empty() ? row.failure_class : row.diagnosis;
    return row.effective_nccl.empty() ? "-" : first_line(row.effective_nccl, 120);
}

// The variables every experiment inherited besides its spec (recorded with the sweep).
std::string inherited_line(const SweepRecord& record) {
    return fmt::format(
        "inherited from the environment the workload started in, not set by the spec (experiments that do "
        "not set them ran with them): {}",
        format_assignments(record.inherited_env));
}

}  // namespace

void TextPrinter::heading(std::string_view text) {
    m_out.write(m_style == Style::markdown ? fmt::format("### {}\n\n", text) : fmt::format("{}\n", text));
}

void TextPrinter::line(std::string_view text) {
    m_out.write(m_style == Style::markdown ? fmt::format("{}\n\n", text) : fmt::format("{}\n", text));
}

void TextPrinter::grid(const Grid& g) {
    m_out.write(render_grid(g, m_style, m_columns));
    m_out.write("\n");
}

void TextPrinter::print_sweeps(std::span<const SweepInfo> sweeps) {
    if (sweeps.empty()) {
        line("no sweeps yet; `ncclsweep run SPEC` records one");
        return;
    }
    Grid g;
    g.column("id", Align::right);
    for (const char* h : {"name", "tag", "target"}) g.column(h, Align::left, Cut::to_fit);
    for (const char* h : {"created", "state"}) g.column(h);
    for (const char* h : {"ok", "failed", "other", "total"}) g.column(h, Align::right);
    for (const auto& s : sweeps) {
        const StatusCounts& c = s.counts;
        g.rows.push_back({std::to_string(s.id), s.record.name, s.record.tag.empty() ? "-" : s.record.tag,
                          s.record.target, when(s), state_text(s), std::to_string(c.ok),
                          std::to_string(c.failed + c.timed_out), other_count(c), std::to_string(c.total())});
    }
    grid(g);
}

void TextPrinter::print_table(const SweepTable& table) {
    const SweepInfo& s = table.sweep;
    heading(fmt::format("{} on {}, created {}, {}: {}", describe_sweep(s), s.record.target, when(s),
                        state_text(s), counts_sentence(s)));
    if (auto note = simulated_note(s.record.backend); !note.empty()) line(note);
    if (s.state == SweepState::running && s.runner_alive == false)
        line(fmt::format(
            "its runner (pid {}) is gone, killed or its host restarted; `ncclsweep run {} --resume {}` "
            "continues it",
            s.runner_pid.value_or(0), s.record.spec_path.empty() ? "SPEC" : shell_quote(s.record.spec_path),
            s.id));
    if (!s.record.inherited_env.empty()) line(inherited_line(s.record));
    if (table.rows.empty()) {
        line("no experiments recorded");
        return;
    }
    Grid g;
    g.column("exp", Align::right);
    g.column("status");
    for (const auto& name : table.varying) g.column(name, Align::left, Cut::to_fit);
    for (const auto& metric : table.columns) {
        g.column(metric_header(metric, s.record), Align::right);
        g.column("±", Align::right);
        g.column("95% CI", Align::right);
    }
    g.column("n", Align::right);
    // What each point's collective times rest on (tpverify's sim says; docs/engine.md "Pricing")
    // goes in its status cell: "ok, relative, what-if".
    const bool labelled = std::any_of(table.rows.begin(), table.rows.end(),
                                      [](const ExperimentRow& r) { return !r.collective_times.empty(); });
    g.column("effective NCCL | diagnosis", Align::left, Cut::to_fit);
    bool few = false;
    bool what_ifs = false;
    for (const auto& row : table.rows) {
        std::vector<std::string> cells{std::to_string(row.exp_id), status_cell(row)};
        for (const auto& [name, value] : row.changed) cells.push_back(value);
        std::size_t n = 0;
        for (const auto& metric : table.columns) {
            const MetricSummary* m = row.metric(metric);
            cells.push_back(m ? format_value(m->summary.median) : "-");
            cells.push_back(m ? format_spread_marked(m->summary, few) : "");
            cells.push_back(m && m->summary.ci ? format_interval(m->summary) : "");
            if (m && n == 0) n = m->summary.n;
        }
        cells.push_back(std::to_string(n));
        what_ifs = what_ifs || row.what_if;
        cells.push_back(note_cell(row));
        g.rows.push_back(std::move(cells));
    }
    grid(g);
    if (few) line(few_samples_footnote());
    if (labelled) {
        line(
            "status: calibrated = collective times measured for NCCL's choice, relative = a measured choice");
        line(
            "        scaled by the model, modelled = NCCL's estimate, nothing measured" +
            std::string(what_ifs ? "; what-if = a server change (fused all-reduce), never recommended" : ""));
    }
}

void TextPrinter::print_best(const BestExperiment& best) {
    const ExperimentRow& row = best.best;
    const MetricSummary* m = row.metric(best.metric.name);
    heading(fmt::format("best of {} by {} ({}), among {} ok experiments with it", describe_sweep(best.sweep),
                        best.metric.name, direction_text(best.metric.direction), best.candidates));
    Grid g;
    g.column("field");
    g.column("value");
    g.rows.push_back({"experiment", std::to_string(row.exp_id)});
    if (auto note = simulated_note(best.sweep.record.backend); !note.empty())
        g.rows.push_back({"data", note});
    g.rows.push_back({"parameters", (row.defaults ? std::string("defaults ") : std::string()) +
                                        format_assignments(row.params)});
    if (m) {
        g.rows.push_back({best.metric.name,
                          fmt::format("{} (median of {})", format_value(m->summary.median), m->summary.n)});
        g.rows.push_back({"95% CI", format_interval(m->summary)});
    }
    g.rows.push_back(
        {"effective NCCL", row.effective_nccl.empty() ? "-" : first_line(row.effective_nccl, 200)});
    g.rows.push_back({"recommended", recommendation_text(best)});
    if (!best.sweep.record.inherited_env.empty())
        g.rows.push_back(
            {"inherited", format_assignments(best.sweep.record.inherited_env) +
                              " (from the environment the workload started in; not set by the spec)"});
    if (!row.collective_times.empty())
        g.rows.push_back(
            {"collective times",
             row.collective_times == "calibrated"
                 ? std::string("calibrated (measured for NCCL's choice)")
                 : "NOT calibrated: " + collective_times_note(row.collective_times, row.what_if)});
    auto names = [&](SettingRole role) {
        std::string out;
        for (const auto& s : best.settings.settings)
            if (s.role == role)
                out += (out.empty() ? "" : " ") + s.name + "=" +
                       (role == SettingRole::change ? s.deploy_value : s.value);
        return out;
    };
    if (auto changes = names(SettingRole::change); !changes.empty()) g.rows.push_back({"deploy", changes});
    if (auto own = names(SettingRole::nccl_choice); !own.empty())
        g.rows.push_back({"left to NCCL", own + " (NCCL's own choice at its defaults)"});
    for (const auto& s : best.settings.settings)
        if (s.role == SettingRole::inert) g.rows.push_back({"inert", s.name + "=" + s.value + ": " + s.why});
    for (const auto& note : best.settings.notes) g.rows.push_back({"note", note});
    if (best.tie()) g.rows.push_back({"tie", tie_text(best)});
    if (best.runner_up) {
        const MetricSummary* r = best.runner_up->metric(best.metric.name);
        g.rows.push_back({"runner-up", fmt::format("experiment {} ({}): {}", best.runner_up->exp_id,
                                                   format_assignments(best.runner_up->changed),
                                                   r ? format_value(r->summary.median) : "-")});
    }
    if (best.margin) {
        const stats::Comparison& c = *best.margin;
        std::string verdict =
            c.verdict == stats::Verdict::improvement ? "clearly better than the runner-up"
            : c.verdict == stats::Verdict::insufficient_samples
                ? "ahead of the runner-up by more than the threshold; too few samples for the test to confirm"
                : "not clearly better than the runner-up";
        g.rows.push_back({"margin", fmt::format("{} ({}, p={}): {}", format_delta(c.delta), verdict,
                                                format_p(c.p_value), c.reason)});
    }
    if (auto what_if = what_if_line(best)) g.rows.push_back({"what-if", *what_if});
    grid(g);
}

}  // namespace ncclsweep::results::detail
