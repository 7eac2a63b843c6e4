// The table `ncclsweep run` prints when the sweep ends, and hyperfine's closing comparison.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/sweep/progress.hpp"
#include "core/text.hpp"

namespace ncclsweep::inline sweep {
namespace {

using Entry = std::pair<Experiment, ExperimentReport>;

constexpr std::size_t k_compared = 5;  // experiments the closing comparison names after the best

std::vector<double> values_of(const ExperimentReport& report, const std::string& metric) {
    std::vector<double> values;
    for (const auto& sample : report.samples)
        if (sample.metric == metric) values.push_back(sample.value);
    return values;
}

std::string number(double value) {
    if (!std::isfinite(value)) return "-";
    if (std::fabs(value) >= 1000) return fmt::format("{:.0f}", value);
    return fmt::format("{:#.4g}", value);  // "129.0", not "129" next to "129.6"
}

/// "±1.2%" from the 95% interval; with too few samples for one, half the min-max range and a
/// footnote mark; "-" for a single sample.
std::string spread_cell(const stats::Summary& s, bool& footnote) {
    if (s.n == 0 || !std::isfinite(s.median) || s.median == 0) return "-";
    if (s.ci) {
        const double half = std::max(s.median - s.ci->low, s.ci->high - s.median);
        return fmt::format("±{:.1f}%", 100 * half / std::fabs(s.median));
    }
    footnote = true;
    if (s.n < 2) return "-\xC2\xB9";
    return fmt::format("±{:.1f}%\xC2\xB9", 100 * (s.max - s.min) / 2 / std::fabs(s.median));
}

/// Word for the closing comparison: "faster" for throughput and times, "better" otherwise.
std::string_view better_word_for(const std::string& metric, const MetricDefinition& definition) {
    const std::string& unit = definition.unit;
    if (metric == "tok_s" || unit.find("/s") != std::string::npos || unit == "s" || unit == "ms" ||
        unit == "us" || unit == "\xC2\xB5s" || unit == "ns")
        return "faster";
    if (default_direction(metric) == stats::Direction::lower_is_better &&
        metric.find("_s") != std::string::npos)
        return "faster";
    return "better";
}

/// "  [times: relative, what-if]": what the collective times rest on (tpverify's sim says), and
/// whether the point needs a server change (it ran the fused kernel: `fused_us`).
std::string times_suffix(const ExperimentReport& report) {
    const bool what_if = std::any_of(report.samples.begin(), report.samples.end(),
                                     [](const SampleValue& s) { return s.metric == "fused_us"; });
    if (report.collective_times.empty() && !what_if) return {};
    std::string text = report.collective_times.empty() ? std::string() : "times: " + report.collective_times;
    if (what_if) text += std::string(text.empty() ? "" : ", ") + "what-if";
    return "  [" + text + "]";
}

void print_row(std::FILE* out, const std::vector<std::size_t>& widths, const std::vector<std::string>& cells,
               int columns) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
        const bool right = i == 0 || (i >= 2 && i <= 4);  // id, value, ±, n
        std::size_t shown = 0;
        for (std::size_t k = 0; k < cells[i].size();
             k += std::max<std::size_t>(1, utf8_sequence(cells[i], k)))
            ++shown;
        const std::string pad(widths[i] > shown ? widths[i] - shown : 0, ' ');
        if (i + 1 == cells.size())
            line += cells[i];
        else
            line += (right ? pad + cells[i] : cells[i] + pad) + "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out, "%s\n", fit_width(line, columns).c_str());
}

}  // namespace

Ratio ratio_of(const stats::Summary& better, const stats::Summary& worse, stats::Direction direction) {
    Ratio r;
    if (!(better.median > 0) || !(worse.median > 0)) return r;
    r.value = direction == stats::Direction::lower_is_better ? worse.median / better.median
                                                             : better.median / worse.median;
    const double a = better.n >= 2 && std::isfinite(better.stddev) ? better.stddev / better.median : 0;
    const double b = worse.n >= 2 && std::isfinite(worse.stddev) ? worse.stddev / worse.median : 0;
    r.spread = r.value * std::sqrt(a * a + b * b);
    return r;
}

void ProgressPrinter::print_summary(std::FILE* out, const std::string& metric_name,
                                    const std::vector<MetricDefinition>& definitions, int columns) const {
    if (m_style == ProgressStyle::json) return;
    // ok rows ranked; then failures; then the search's decisions (pruned, dropped), each with its
    // reason below it like a failure's diagnosis (docs/search.md). Only ok rows are compared.
    std::vector<const Entry*> ok, failed, decided;
    for (const auto& entry : m_reports) {
        switch (entry.second.status) {
            case RunStatus::ok:
                ok.push_back(&entry);
                break;
            case RunStatus::pruned:
            case RunStatus::dropped:
                decided.push_back(&entry);
                break;
            default:
                failed.push_back(&entry);
                break;
        }
    }
    std::string metric = metric_name;
    if (!ok.empty()) metric = pick_metric(ok.front()->second, metric_name);
    const MetricDefinition definition = definition_of(metric, definitions);
    const bool lower = definition.better == stats::Direction::lower_is_better;
    std::vector<stats::Summary> summaries;
    std::stable_sort(ok.begin(), ok.end(), [&](const Entry* a, const Entry* b) {
        auto x = a->second.median(metric), y = b->second.median(metric);
        if (x.has_value() != y.has_value()) return x.has_value();
        if (!x) return false;
        return lower ? *x < *y : *x > *y;
    });
    for (const Entry* entry : ok) summaries.push_back(stats::summarize(values_of(entry->second, metric)));

    const std::string value_header =
        metric.empty() ? std::string("result")
        : definition.unit.empty()
            ? metric
            : fmt::format("{} [{}]", metric, definition.unit == "us" ? "\xC2\xB5s" : definition.unit);
    std::vector<std::vector<std::string>> rows{{"id", "status", value_header, "±", "n", "parameters"}};
    bool footnote = false;
    for (std::size_t i = 0; i < ok.size(); ++i) {
        const stats::Summary& s = summaries[i];
        rows.push_back({std::to_string(ok[i]->first.id), "ok", s.n ? number(s.median) : "-",
                        spread_cell(s, footnote), std::to_string(s.n),
                        describe_params(ok[i]->first) + times_suffix(ok[i]->second)});
    }
    for (const Entry* entry : failed)
        rows.push_back({std::to_string(entry->first.id),
                        fmt::format("{} ({})", to_string(entry->second.status), entry->second.failure_class),
                        "-", "", "", describe_params(entry->first)});
    for (const Entry* entry : decided) {
        const stats::Summary s = stats::summarize(values_of(entry->second, metric));
        rows.push_back({std::to_string(entry->first.id), std::string(to_string(entry->second.status)),
                        s.n ? number(s.median) : "-", s.n ? spread_cell(s, footnote) : "",
                        std::to_string(s.n), describe_params(entry->first)});
    }
    failed.insert(failed.end(), decided.begin(), decided.end());  // rows below ok: their reasons follow
    std::vector<std::size_t> widths(rows.front().size(), 0);
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) {
            std::size_t shown = 0;
            for (std::size_t k = 0; k < row[i].size();
                 k += std::max<std::size_t>(1, utf8_sequence(row[i], k)))
                ++shown;
            widths[i] = std::max(widths[i], shown);
        }
    for (std::size_t r = 0; r < rows.size(); ++r) {
        print_row(out, widths, rows[r], columns);
        const std::size_t failed_index = r >= 1 + ok.size() ? r - 1 - ok.size() : failed.size();
        if (failed_index < failed.size() && !failed[failed_index]->second.diagnosis.empty())
            std::fprintf(
                out, "%s\n",
                fit_width("      " + first_line(failed[failed_index]->second.diagnosis, 150), columns)
                    .c_str());
    }
    if (footnote)
        std::fprintf(
            out,
            "\xC2\xB9 fewer than %zu samples: \xC2\xB1 is half the min-max range, not a 95%% interval "
            "(repeats: %zu or more gives one)\n",
            stats::min_samples_for_interval(), stats::min_samples_for_interval());

    // hyperfine's closing lines: the best against the next few and the last.
    std::vector<std::size_t> measured;
    for (std::size_t i = 0; i < ok.size(); ++i)
        if (summaries[i].n > 0 && summaries[i].median > 0) measured.push_back(i);
    if (measured.size() < 2) return;
    const std::string_view word = better_word_for(metric, definition);
    const std::size_t best = measured.front();
    std::fprintf(out, "\nSummary (%s, median)\n", metric.c_str());
    std::fprintf(
        out, "%s\n",
        fit_width(fmt::format("  #{} ({}) ran", ok[best]->first.id, describe_params(ok[best]->first)),
                  columns)
            .c_str());
    std::vector<std::size_t> named(
        measured.begin() + 1,
        measured.begin() + static_cast<std::ptrdiff_t>(std::min(measured.size(), k_compared)));
    if (measured.size() > k_compared) named.push_back(measured.back());
    for (std::size_t k = 0; k < named.size(); ++k) {
        const std::size_t hidden = measured.size() - 1 - named.size();
        if (k + 1 == named.size() && hidden > 0) std::fprintf(out, "    ... %zu more ...\n", hidden);
        const std::size_t i = named[k];
        const Ratio r = ratio_of(summaries[best], summaries[i], definition.better);
        std::fprintf(out, "%s\n",
                     fit_width(fmt::format("    {:.2f} \xC2\xB1 {:.2f} times {} than #{} ({})", r.value,
                                           r.spread, word, ok[i]->first.id, describe_params(ok[i]->first)),
                               columns)
                         .c_str());
    }
}

}  // namespace ncclsweep::inline sweep
