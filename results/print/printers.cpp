// The printer factory, the output sink and the value formatting the text printers share.
#include "results/print/printers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "results/print/printers_detail.hpp"

namespace ncclsweep::results {

void Output::write(std::string_view text) {
    if (m_text) m_text->append(text);
    if (m_file && !text.empty()) std::fwrite(text.data(), 1, text.size(), m_file);
}

Result<Format> parse_format(std::string_view text) {
    if (text == "table" || text == "text") return Format::table;
    if (text == "markdown" || text == "md") return Format::markdown;
    if (text == "json") return Format::json;
    return Error::bad_input(fmt::format("unknown format '{}'; use table, markdown or json", text));
}

std::unique_ptr<Printer> make_printer(Format format, Output& out, int columns) {
    switch (format) {
        case Format::table:
            return std::make_unique<detail::TextPrinter>(detail::Style::table, out, columns);
        case Format::markdown:
            return std::make_unique<detail::TextPrinter>(detail::Style::markdown, out);
        case Format::json:
            return std::make_unique<detail::JsonPrinter>(out);
    }
    return std::make_unique<detail::TextPrinter>(detail::Style::table, out);
}

namespace detail {

std::string format_value(double value) {
    if (std::isnan(value)) return "-";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    const double magnitude = std::fabs(value);
    if (magnitude >= 1000) return fmt::format("{:.0f}", value);
    if (magnitude >= 100) return fmt::format("{:.1f}", value);
    if (magnitude >= 10) return fmt::format("{:.2f}", value);
    if (magnitude >= 1) return fmt::format("{:.3f}", value);
    if (magnitude == 0) return "0";
    return fmt::format("{:.4g}", value);
}

std::string format_delta(double fraction) {
    if (std::isnan(fraction)) return "-";
    if (std::isinf(fraction)) return fraction > 0 ? "+inf%" : "-inf%";
    const double percent = fraction * 100;
    if (std::fabs(percent) < 0.05) return "0.0%";  // avoid "-0.0%"
    return fmt::format("{:+.1f}%", percent);
}

std::string format_p(double p) {
    if (std::isnan(p)) return "-";
    if (p < 0.001) return fmt::format("{:.1e}", p);
    return fmt::format("{:.3f}", p);
}

std::string format_interval(const stats::Summary& summary) {
    if (summary.n == 0) return "-";
    if (!summary.ci) return fmt::format("n<{}", stats::min_samples_for_interval());
    return fmt::format("[{}, {}]", format_value(summary.ci->low), format_value(summary.ci->high));
}

std::string format_spread(const stats::Summary& summary) {
    if (!summary.ci || summary.median == 0 || std::isnan(summary.median)) return "";
    const double half = std::max(summary.median - summary.ci->low, summary.ci->high - summary.median);
    return fmt::format("±{:.1f}%", 100 * half / std::fabs(summary.median));
}

std::string format_spread_marked(const stats::Summary& summary, bool& few) {
    if (summary.n == 0 || std::isnan(summary.median)) return "-";
    if (summary.ci) return format_spread(summary);
    few = true;
    if (summary.n < 2 || summary.median == 0) return "-\xC2\xB9";
    return fmt::format("±{:.1f}%\xC2\xB9", 100 * (summary.max - summary.min) / 2 / std::fabs(summary.median));
}

std::string few_samples_footnote() {
    return fmt::format(
        "\xC2\xB9 fewer than {0} samples: no 95% interval of the median exists, so \xC2\xB1 is half "
        "the min-max range (repeats: {0} or more gives one)",
        stats::min_samples_for_interval());
}

std::string metric_header(const std::string& metric, const SweepRecord& record) {
    for (const auto& definition : record.metrics)
        if (definition.name == metric && !definition.unit.empty())
            return fmt::format("{} [{}]", metric, definition.unit == "us" ? "\xC2\xB5s" : definition.unit);
    return metric;
}

std::string format_assignments(const std::vector<Assignment>& assignments) {
    std::string out;
    for (const auto& [name, value] : assignments) out += (out.empty() ? "" : " ") + name + "=" + value;
    return out;
}

std::string describe_sweep(const SweepInfo& sweep) {
    std::string text = fmt::format("sweep {} '{}'", sweep.id, sweep.record.name);
    if (!sweep.record.tag.empty()) text += fmt::format(" [{}]", sweep.record.tag);
    return text;
}

}  // namespace detail
}  // namespace ncclsweep::results
