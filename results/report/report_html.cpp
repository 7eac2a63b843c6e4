// The report page: one HTML document with inline CSS and the SVG of report_svg.cpp. No script,
// no external resource; every text from the database is escaped.
#include <fmt/format.h>

#include "results/report/report_html.hpp"

namespace ncclsweep::results::report {
namespace {

using exports::xml_escape;

constexpr const char* k_css = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1140px;color:#1d2430;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d7dce3;padding-bottom:4px}
.meta{color:#5b6573;margin:0 0 12px}.legend{color:#5b6573;font-size:13px;margin:4px 0 8px}
.note{background:#f4f6f9;border-left:3px solid #9aa5b4;padding:6px 10px;color:#3b4453}
svg text{font:12px system-ui,sans-serif;fill:#1d2430}svg .tick{fill:#5b6573;font-size:11px}svg .axis{font-weight:600}
svg .grid{stroke:#e3e7ec;stroke-width:1}svg .grid.zero{stroke:#5b6573}
svg .bar{fill:#3b6ea8}svg .bar.best{fill:#1f9d55}svg .bar.dropped{fill:#b8c0cb}svg .whisker{stroke:#111;stroke-width:1.5;fill:none}
svg .whisker.minmax{stroke-dasharray:3 2}svg .fail{fill:#c0392b}svg .failtext,svg .regressiontext{fill:#c0392b}
svg .improvementtext{fill:#1f9d55}svg .muted{fill:#8a93a0}svg .value{fill:#3b4453}
svg .failcell{fill:#fbe9e7;stroke:#c0392b;stroke-width:1}svg .emptycell{fill:#f4f6f9}
svg .celltext{fill:#fff;font-weight:600}svg .celltext.dark{fill:#1d2430}
svg .dbar.improvement{fill:#1f9d55}svg .dbar.regression{fill:#c0392b}svg .dbar.same{fill:#9aa5b4}
figure{margin:0;overflow-x:auto}svg{max-width:100%;height:auto}
table{border-collapse:collapse;margin:6px 0 12px}td,th{border:1px solid #d7dce3;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f9}td.num{text-align:right;font-variant-numeric:tabular-nums}code{font-size:12px}
.cls{color:#c0392b;font-weight:600}.swatch{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin:0 4px}
)";

std::string sweep_title(const exports::SweepData& sweep) {
    std::string tag = sweep.info.record.tag.empty() ? "" : " tag " + sweep.info.record.tag;
    return fmt::format("sweep {} \xE2\x80\x9C{}\xE2\x80\x9D{}", sweep.info.id, sweep.info.record.name, tag);
}

std::string meta_line(const exports::SweepData& sweep) {
    const auto& s = sweep.info;
    return fmt::format(
        "{} on {}, created {}, state {}: {} experiments, {} ok, {} failed, {} timed out, {} infra errors, "
        "{} skipped, {} pruned, {} dropped, {} not run; {} repeats each{}",
        sweep_title(sweep), s.record.target, s.created_at, state_text(s), s.counts.total(), s.counts.ok,
        s.counts.failed, s.counts.timed_out, s.counts.infra_error, s.counts.skipped, s.counts.pruned,
        s.counts.dropped, s.counts.pending + s.counts.running, s.record.repeats,
        s.record.backend == "sim" ? std::string(". ") + simulated_note(s.record.backend) : std::string());
}

std::string failures_html(const ReportData& data) {
    if (data.failures.empty()) return "<p class=\"note\">No experiment failed.</p>\n";
    std::string out;
    for (const auto& group : data.failures) {
        out += fmt::format(
            "<h3><span class=\"cls\">{}</span> \xE2\x80\x94 {} experiment{}</h3>\n<table class=\"failures\">"
            "<tr><th>id</th><th>configuration</th><th>status</th><th>diagnosis</th></tr>\n",
            xml_escape(group.failure_class, false), group.entries.size(),
            group.entries.size() == 1 ? "" : "s");
        for (const auto& entry : group.entries)
            out += fmt::format(
                "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
                entry.id, xml_escape(entry.label, false), xml_escape(entry.status, false),
                xml_escape(entry.diagnosis_line, false));
        out += "</table>\n";
    }
    return out;
}

std::string deltas_html(const ReportData& data) {
    std::string out =
        fmt::format("<h2>Change against {}</h2>\n<p class=\"meta\">{}</p>\n",
                    xml_escape(sweep_title(*data.base), false), xml_escape(meta_line(*data.base), false));
    out += fmt::format(
        "<p class=\"legend\">Matched by canonical key: {} matched, {} only in the base, {} only in this "
        "sweep. Bars: change of the median {} in percent; <span class=\"swatch\" style=\"background:"
        "#1f9d55\"></span>improvement and <span class=\"swatch\" style=\"background:#c0392b\"></span>"
        "regression are the verdicts of <code>ncclsweep diff</code> with its defaults: significant "
        "(Mann\xE2\x80\x93Whitney U, \xCE\xB1 0.05) and larger than the 3% threshold; grey is "
        "\xE2\x80\x9C~\xE2\x80\x9D "
        "(within the threshold, not significant, or too few samples). <code>ncclsweep diff</code> also "
        "gates CI.</p>\n",
        data.deltas.size(), data.only_in_base, data.only_in_new, xml_escape(data.metric, false));
    if (data.deltas.empty())
        return out + "<p class=\"note\">No experiment of this sweep matches one of the base.</p>\n";
    return out + "<figure>" + delta_svg(data) + "</figure>\n";
}

}  // namespace

std::string render_html(const ReportData& data) {
    const exports::SweepData& sweep = *data.sweep;
    const bool lower = data.direction == stats::Direction::lower_is_better;
    std::string out =
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
        "'unsafe-inline'; img-src data:\">\n";
    out += fmt::format("<title>ncclsweep report: {}</title>\n<style>{}</style>\n</head>\n<body>\n",
                       xml_escape(sweep_title(sweep), false), k_css);
    out += fmt::format("<h1>ncclsweep report: {}</h1>\n<p class=\"meta\">{}</p>\n",
                       xml_escape(sweep_title(sweep), false), xml_escape(meta_line(sweep), false));

    bool any_minmax = false, any_ci = false;
    for (const auto& bar : data.bars)
        if (bar.stats) (bar.stats->interval_is_ci ? any_ci : any_minmax) = true;
    if (!data.recommendation.empty()) {
        // `results best`'s answer, stated against NCCL's defaults, and how its tie was resolved.
        out +=
            "<h2>Recommendation</h2>\n<p class=\"note\">" + xml_escape(data.recommendation, false) + "</p>\n";
        if (!data.tie.empty()) out += "<p class=\"legend\">Tie: " + xml_escape(data.tie, false) + "</p>\n";
    }
    out += fmt::format("<h2>{} per configuration</h2>\n", xml_escape(data.metric, false));
    std::string legend = fmt::format(
        "Bars sorted best first. Bar: median {} over the repeats ({} is better); <span class=\"swatch\" "
        "style=\"background:#1f9d55\"></span>best. Labels show the parameters that vary (hover a row for "
        "all of it). Whiskers: ",
        xml_escape(data.metric, false), lower ? "lower" : "higher");
    if (any_ci) legend += "95% confidence interval of the median (distribution-free, order statistics)";
    if (any_ci && any_minmax) legend += "; ";
    if (any_minmax)
        legend +=
            "dashed whiskers (and \xC2\xB1 marked \xC2\xB9) are min\xE2\x80\x93max, because fewer than 6 "
            "samples "
            "cannot give a 95% interval of the median";
    if (!any_ci && !any_minmax) legend += "none (no samples)";
    legend +=
        ". <span class=\"swatch\" style=\"background:#c0392b\"></span>failed, with its class; "
        "<span class=\"swatch\" style=\"background:#b8c0cb\"></span>dropped by the search (behind the "
        "leader or collapsed), with the samples it had; pruned points never ran and are named.";
    out += "<p class=\"legend\">" + legend + "</p>\n";
    if (data.bars_omitted)
        out += fmt::format(
            "<p class=\"note\">{} more experiments are not drawn (the best {} are); the export formats "
            "list them all.</p>\n",
            data.bars_omitted, data.bars.size());
    out += "<figure>" + bars_svg(data) + "</figure>\n";
    bool labelled = false;
    for (const auto& bar : data.bars) labelled = labelled || !bar.collective_times.empty();
    if (labelled)
        out +=
            "<p class=\"legend\">[calibrated]: collective times measured for NCCL's choice; [relative]: a "
            "measured choice scaled by the model; [modelled]: NCCL's estimate, nothing measured; [what-if]: "
            "needs a server change (the fused all-reduce), never the recommendation.</p>\n";
    if (!data.caveat.empty()) out += "<p class=\"note\">" + xml_escape(data.caveat, false) + "</p>\n";
    if (!data.what_if.empty()) out += "<p class=\"note\">" + xml_escape(data.what_if, false) + "</p>\n";

    out += "<h2>Heat map</h2>\n";
    if (data.heatmap) {
        const Heatmap& map = *data.heatmap;
        out += fmt::format(
            "<p class=\"legend\">Cell colour: {}median {} against the best of the whole sweep{}, in percent "
            "({} is better; the scale on the right with the values it stands for, brighter is closer to the "
            "best){}. Red cells: every experiment there failed, marked with the most common failure class. "
            "Grey: no experiment.{}</p>\n",
            map.aggregated ? "best " : "", xml_escape(data.metric, false),
            map.reference_id ? fmt::format(" (experiment {})", map.reference_id) : std::string(),
            lower ? "lower" : "higher", map.aggregated ? ", over the other parameters at that cell" : "",
            map.chosen_by_variance
                ? fmt::format(" Axes: the two parameters that explain most of the variance of the median "
                              "({} {:.0f}%, {} {:.0f}%); <code>--heatmap A,B</code> picks others.",
                              xml_escape(map.x_axis, false), 100 * map.x_share, xml_escape(map.y_axis, false),
                              100 * map.y_share)
                : std::string());
        out += "<figure>" + heatmap_svg(*data.heatmap, data.direction) + "</figure>\n";
        if (!map.off_map.empty()) {
            out += fmt::format(
                "<p class=\"legend\">Not on the map ({} or {} is not a parameter of {}):</p>\n<ul>",
                xml_escape(map.x_axis, false), xml_escape(map.y_axis, false),
                map.off_map.size() == 1 ? "this experiment" : "these experiments");
            for (const auto& entry : map.off_map) out += "<li>" + xml_escape(entry, false) + "</li>";
            out += "</ul>\n";
        }
    } else {
        out += "<p class=\"note\">" + xml_escape(data.heatmap_note, false) + "</p>\n";
    }
    out += "<h2>Failures by class</h2>\n" + failures_html(data);
    if (!data.left_out.empty()) {
        // A search's decisions (docs/search.md): what it did not run, or stopped running, and why.
        out += fmt::format(
            "<h2>Left out by the search</h2>\n<p class=\"meta\">{} experiment{} pruned or dropped; "
            "each with its evidence</p>\n<table class=\"failures\"><tr><th>id</th><th>configuration</th>"
            "<th>status</th><th>reason</th></tr>\n",
            data.left_out.size(), data.left_out.size() == 1 ? "" : "s");
        for (const auto& entry : data.left_out)
            out += fmt::format(
                "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
                entry.id, xml_escape(entry.label, false), xml_escape(entry.status, false),
                xml_escape(entry.diagnosis_line, false));
        out += "</table>\n";
    }
    if (data.base) out += deltas_html(data);
    out += fmt::format(
        "<p class=\"legend\">Written by ncclsweep {}. Self-contained: no script, no network.</p>\n",
        xml_escape(NCCLSWEEP_VERSION, false));
    return out + "</body>\n</html>\n";
}

}  // namespace ncclsweep::results::report
