// Server-side SVG for the report: bars with whiskers, heat map, change against a base.
// Coordinates are computed here; every text passes through xml_escape.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/text.hpp"
#include "results/report/report_html.hpp"

namespace ncclsweep::results::report {
namespace {

using exports::format_number;
using exports::xml_escape;

constexpr double k_width = 1100;
constexpr double k_label_width = 380;
constexpr double k_row = 22;
constexpr double k_line = 14;              // one more label line adds this to a row
constexpr std::size_t k_label_chars = 46;  // characters of a label line: 12px text in k_label_width

/// Label text cut to fit its column; the full text goes into a <title> tooltip.
std::string short_label(const std::string& text, std::size_t max_chars) {
    std::string clean = exports::clean_text(text, false);
    if (clean.size() <= max_chars) return clean;
    return std::string(utf8_prefix(clean, max_chars - 1)) + "\xE2\x80\xA6";
}

/// A label's lines: "#12 " then the label broken at word boundaries (never cut; the row's
/// <title> holds the whole text for hovering).
std::vector<std::string> label_lines(const std::string& first, const std::string& label) {
    auto lines = wrap_words(exports::clean_text(label, false), k_label_chars - first.size());
    if (lines.empty()) lines.emplace_back();
    lines.front() = first + lines.front();
    return lines;
}

/// The lines as one <text> with a <tspan> per line, right-aligned at `x`.
std::string label_text(double x, double y, const std::vector<std::string>& lines) {
    std::string svg =
        fmt::format("<text class=\"label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">", x, y);
    for (std::size_t i = 0; i < lines.size(); ++i)
        svg += fmt::format("<tspan x=\"{:.1f}\" dy=\"{}\">{}</tspan>", x, i == 0 ? 0.0 : k_line,
                           xml_escape(lines[i], false));
    return svg + "</text>";
}

/// Height of a row whose label has `lines` lines.
double row_height(std::size_t lines) {
    return k_row + k_line * static_cast<double>(lines > 0 ? lines - 1 : 0);
}

/// Every row's label lines ("#id label", broken at spaces) and the height of all the rows.
template <typename Row>
std::pair<std::vector<std::vector<std::string>>, double> label_block(const std::vector<Row>& rows) {
    std::pair<std::vector<std::vector<std::string>>, double> block{{}, 0.0};
    for (const auto& row : rows) {
        block.first.push_back(label_lines(fmt::format("#{} ", row.id), row.label));
        block.second += row_height(block.first.back().size());
    }
    return block;
}

std::string compact(double value) {
    if (!std::isfinite(value)) return "-";
    double magnitude = std::fabs(value);
    if (magnitude >= 100 || value == std::floor(value)) return fmt::format("{:.0f}", value);
    if (magnitude >= 1) return fmt::format("{:.2f}", value);
    return fmt::format("{:.4g}", value);
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `ticks` intervals up to `top`.
double nice_step(double top, int ticks) {
    double raw = top / ticks;
    double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * power >= raw) return m * power;
    return 10 * power;
}

}  // namespace

std::vector<std::string> wrap_words(const std::string& text, std::size_t max_chars) {
    max_chars = std::max<std::size_t>(max_chars, 8);
    auto length = [](std::string_view w) {
        std::size_t n = 0;
        for (std::size_t i = 0; i < w.size(); i += std::max<std::size_t>(1, utf8_sequence(w, i))) ++n;
        return n;
    };
    std::vector<std::string> words;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        std::string word = text.substr(start, end - start);
        while (length(word) > max_chars) {  // break inside the word after a separator
            std::string_view head = utf8_prefix(word, max_chars);
            std::size_t cut = head.find_last_of("=,:;");
            cut = cut == std::string_view::npos || cut == 0 ? head.size() : cut + 1;
            words.push_back(word.substr(0, cut));
            word = word.substr(cut);
        }
        if (!word.empty()) words.push_back(std::move(word));
        start = end + 1;
    }
    std::vector<std::string> lines;
    for (auto& word : words) {
        if (!lines.empty() && length(lines.back()) + 1 + length(word) <= max_chars)
            lines.back() += " " + word;
        else
            lines.push_back(std::move(word));
    }
    return lines;
}

namespace {

/// The colour scale's reference: the sweep's best median, else the best cell.
std::optional<double> reference_of(const Heatmap& map, stats::Direction direction) {
    if (map.reference) return map.reference;
    std::optional<double> best;
    for (const auto& cell : map.cells)
        if (cell.value && (!best || (direction == stats::Direction::lower_is_better ? *cell.value < *best
                                                                                    : *cell.value > *best)))
            best = cell.value;
    return best;
}

}  // namespace

double heatmap_span(const Heatmap& map, stats::Direction direction) {
    const std::optional<double> best = reference_of(map, direction);
    double worst = 0;
    if (best && *best != 0)
        for (const auto& cell : map.cells)
            if (cell.value) worst = std::max(worst, std::fabs(*cell.value - *best) / std::fabs(*best));
    const double span = std::max(worst, 0.05);
    const double step = nice_step(span, 5);
    return std::ceil(span / step - 1e-9) * step;
}

std::string ramp_colour(double t) {
    // Five stops of a viridis-like ramp: perceptually ordered, readable for colour-blind people.
    static constexpr double k_stops[5][3] = {
        {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 4;
    int i = std::min(3, static_cast<int>(t));
    double f = t - i;
    auto channel = [&](int c) {
        return static_cast<int>(std::lround(k_stops[i][c] + f * (k_stops[i + 1][c] - k_stops[i][c])));
    };
    return fmt::format("#{:02x}{:02x}{:02x}", channel(0), channel(1), channel(2));
}

std::string bars_svg(const ReportData& data) {
    double top = 0;
    for (const auto& bar : data.bars)
        if (bar.stats) top = std::max({top, bar.stats->high, bar.stats->median});
    if (!(top > 0)) top = 1;
    const double step = nice_step(top * 1.02, 5);
    top = std::ceil(top * 1.02 / step) * step;
    const double plot_x = k_label_width + 10, plot_w = k_width - plot_x - 150;
    const auto [labels, rows_height] = label_block(data.bars);
    const double height = 30 + rows_height + 30;
    auto x_of = [&](double v) { return plot_x + std::clamp(v / top, 0.0, 1.0) * plot_w; };
    std::string svg = fmt::format(
        "<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 "
        "{0} {1}\" "
        "role=\"img\" aria-label=\"{2} per configuration\">\n",
        k_width, height, xml_escape(data.metric, false));
    for (double v = 0; v <= top + step / 2; v += step) {
        double x = x_of(v);
        svg += fmt::format(
            "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"20\" x2=\"{0:.1f}\" y2=\"{1:.1f}\"/>"
            "<text class=\"tick\" x=\"{0:.1f}\" y=\"14\" text-anchor=\"middle\">{2}</text>\n",
            x, height - 25, compact(v));
    }
    double y = 30;
    for (std::size_t i = 0; i < data.bars.size(); ++i) {
        const Bar& bar = data.bars[i];
        std::string title = fmt::format("experiment {}: {} ({})", bar.id, bar.label, bar.status);
        svg += fmt::format("<g class=\"row\"><title>{}</title>", xml_escape(title, false));
        svg += label_text(k_label_width, y + 15, labels[i]);
        const double h = row_height(labels[i].size());
        if (bar.stats) {
            const auto& s = *bar.stats;
            svg += fmt::format(
                "<rect class=\"bar{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>",
                bar.best      ? " best"
                : bar.dropped ? " dropped"
                              : "",
                plot_x, y + 3, x_of(s.median) - plot_x, k_row - 6);
            double lo = x_of(s.low), hi = x_of(s.high), mid = y + k_row / 2;
            svg += fmt::format(
                "<path class=\"whisker{}\" d=\"M{:.1f} {:.1f}H{:.1f}M{:.1f} {:.1f}V{:.1f}M{:.1f} "
                "{:.1f}V{:.1f}\"/>",
                s.interval_is_ci ? "" : " minmax", lo, mid, hi, lo, mid - 5, mid + 5, hi, mid - 5, mid + 5);
            const double half = std::max(s.median - s.low, s.high - s.median);
            const std::string spread =
                s.n < 2 || s.median == 0 ? std::string()
                                         : fmt::format(" \xC2\xB1{:.1f}%{}", 100 * half / std::fabs(s.median),
                                                       s.interval_is_ci ? "" : "\xC2\xB9");
            svg += fmt::format("<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{}{} (n={}){}</text>",
                               plot_x + plot_w + 6, y + 15, compact(s.median), spread, s.n,
                               bar.dropped ? " dropped" : "");
        } else if (!bar.failure_class.empty()) {
            svg += fmt::format(
                "<rect class=\"fail\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\"/>"
                "<text class=\"failtext\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                plot_x, y + 5, plot_x + 18, y + 15, xml_escape(bar.failure_class, false));
        } else {
            svg += fmt::format(
                "<text class=\"muted\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", plot_x, y + 15,
                xml_escape(bar.status == "ok" ? "no " + data.metric + " samples" : bar.status, false));
        }
        svg += "</g>\n";
        y += h;
    }
    return svg + "</svg>\n";
}

std::string heatmap_svg(const Heatmap& map, stats::Direction direction) {
    const bool lower = direction == stats::Direction::lower_is_better;
    std::size_t widest = 4;
    for (const auto& v : map.x_values) widest = std::max(widest, exports::clean_text(v, false).size());
    const double cell_w = std::clamp(
        std::max(640.0 / std::max<std::size_t>(1, map.x_values.size()), 7.0 * widest + 12), 56.0, 160.0);
    std::size_t widest_y = 4;
    for (const auto& v : map.y_values) widest_y = std::max(widest_y, exports::clean_text(v, false).size());
    const double cell_h = 34, top = 60;
    const double left = std::clamp(7.0 * std::max(widest_y, map.y_axis.size()) + 24, 120.0, 300.0);
    const double grid_w = cell_w * map.x_values.size();
    const double legend_x = left + grid_w + 30, legend_w = 16;
    const double width = legend_x + legend_w + 150;
    const double height = std::max(top + cell_h * map.y_values.size() + 20, top + 190);
    const std::optional<double> best = reference_of(map, direction);
    const double span = heatmap_span(map, direction);
    // t = 1 at the sweep's best, 0 at `span` (or more) short of it: the ramp is relative to the best.
    auto t_of = [&](double value) {
        if (!best || *best == 0) return 1.0;
        return 1.0 - std::clamp(std::fabs(value - *best) / std::fabs(*best) / span, 0.0, 1.0);
    };
    std::string svg = fmt::format(
        "<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
        "viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" aria-label=\"heat map\">\n",
        width, height);
    svg += fmt::format(
        "<text class=\"axis\" x=\"{:.1f}\" y=\"16\" text-anchor=\"middle\">{} \xE2\x86\x92</text>\n",
        left + grid_w / 2, xml_escape(exports::clean_text(map.x_axis, false), false));
    svg += fmt::format("<text class=\"axis\" x=\"8\" y=\"{:.1f}\">{} \xE2\x86\x93</text>\n", top - 8,
                       xml_escape(exports::clean_text(map.y_axis, false), false));
    for (std::size_t x = 0; x < map.x_values.size(); ++x)
        svg += fmt::format(
            "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" "
            "text-anchor=\"middle\">{}<title>{}</title></text>\n",
            left + cell_w * (x + 0.5), top - 10,
            xml_escape(short_label(map.x_values[x], static_cast<std::size_t>((cell_w - 8) / 7)), false),
            xml_escape(map.x_values[x], false));
    for (std::size_t y = 0; y < map.y_values.size(); ++y) {
        double cy = top + cell_h * y;
        svg += fmt::format(
            "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}<title>{}</title></text>\n",
            left - 8, cy + 21,
            xml_escape(short_label(map.y_values[y], static_cast<std::size_t>((left - 16) / 7)), false),
            xml_escape(map.y_values[y], false));
        for (std::size_t x = 0; x < map.x_values.size(); ++x) {
            const HeatCell& cell = map.cells[y * map.x_values.size() + x];
            double cx = left + cell_w * x;
            std::string tip =
                fmt::format("{}={}, {}={}: ", map.x_axis, map.x_values[x], map.y_axis, map.y_values[y]);
            if (cell.value) {
                const double t = t_of(*cell.value);
                const double off = best && *best != 0 ? (*cell.value - *best) / std::fabs(*best) : 0;
                tip += fmt::format("{} ({:+.1f}% against the best; {} experiments, {} failed)",
                                   format_number(*cell.value), 100 * off, cell.experiments, cell.failed);
                svg += fmt::format(
                    "<g class=\"cell\"><title>{}</title><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                    "height=\"{:.1f}\" fill=\"{}\"/><text class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" "
                    "text-anchor=\"middle\">{}</text></g>\n",
                    xml_escape(tip, false), cx + 1, cy + 1, cell_w - 2, cell_h - 2, ramp_colour(t),
                    t > 0.6 ? "celltext dark" : "celltext", cx + cell_w / 2, cy + 21, compact(*cell.value));
            } else if (cell.failed > 0) {
                tip += fmt::format("{} of {} failed ({})", cell.failed, cell.experiments, cell.failure_class);
                svg += fmt::format(
                    "<g class=\"cell failed\"><title>{}</title><rect class=\"failcell\" x=\"{:.1f}\" "
                    "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/><text class=\"failtext\" x=\"{:.1f}\" "
                    "y=\"{:.1f}\" text-anchor=\"middle\">\xE2\x9C\x97 {}</text></g>\n",
                    xml_escape(tip, false), cx + 1, cy + 1, cell_w - 2, cell_h - 2, cx + cell_w / 2, cy + 21,
                    xml_escape(short_label(cell.failure_class, static_cast<std::size_t>(cell_w / 8)), false));
            } else {
                tip += cell.experiments ? "no value" : "not in this sweep";
                svg += fmt::format(
                    "<g class=\"cell empty\"><title>{}</title><rect class=\"emptycell\" x=\"{:.1f}\" "
                    "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/></g>\n",
                    xml_escape(tip, false), cx + 1, cy + 1, cell_w - 2, cell_h - 2);
            }
        }
    }
    // The legend: the ramp from the best (top) to `span` short of it (bottom), in percent.
    const double legend_h = 150;
    svg += fmt::format(
        "<g class=\"scale\"><text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">vs the best{}</text>\n", legend_x,
        top - 10, map.reference_id ? fmt::format(" (experiment {})", map.reference_id) : std::string());
    constexpr int k_steps = 20;
    for (int i = 0; i < k_steps; ++i)
        svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.2f}\" fill=\"{}\"/>",
                           legend_x, top + legend_h * i / k_steps, legend_w, legend_h / k_steps + 0.5,
                           ramp_colour(1.0 - (i + 0.5) / k_steps));
    for (int i = 0; i <= 4; ++i) {
        const double fraction = span * i / 4;
        // Percent short of the sweep's best and the value it stands for.
        const double value = best ? *best * (lower ? 1 + fraction : 1 - fraction) : 0;
        const std::string text =
            (i == 0 ? std::string("best")
                    : fmt::format("{}{:.3g}%", lower ? "+" : "\xE2\x88\x92", 100 * fraction)) +
            (best ? " (" + compact(value) + ")" : std::string());
        svg +=
            fmt::format("<text class=\"tick legendtick\" x=\"{:.1f}\" y=\"{:.1f}\">{}{}</text>",
                        legend_x + legend_w + 4, top + legend_h * i / 4 + 4, text, i == 4 ? " or more" : "");
    }
    return svg + "</g>\n</svg>\n";
}

std::string delta_svg(const ReportData& data) {
    double span = 0.05;
    for (const auto& row : data.deltas)
        if (row.delta && std::isfinite(*row.delta)) span = std::max(span, std::fabs(*row.delta));
    span = std::ceil(span * 1.05 / nice_step(span * 1.05, 2)) * nice_step(span * 1.05, 2);
    const double plot_x = k_label_width + 10, plot_w = k_width - plot_x - 190, zero = plot_x + plot_w / 2;
    const auto [labels, rows_height] = label_block(data.deltas);
    const double height = 30 + rows_height + 20;
    auto x_of = [&](double d) { return zero + std::clamp(d / span, -1.0, 1.0) * plot_w / 2; };
    std::string svg = fmt::format(
        "<svg class=\"delta\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 "
        "0 {0} {1}\" "
        "role=\"img\" aria-label=\"change against the base sweep\">\n",
        k_width, height);
    for (double d : {-span, -span / 2, 0.0, span / 2, span})
        svg += fmt::format(
            "<line class=\"grid{}\" x1=\"{:.1f}\" y1=\"20\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
            "<text class=\"tick\" x=\"{:.1f}\" y=\"14\" text-anchor=\"middle\">{:+.1f}%</text>\n",
            d == 0 ? " zero" : "", x_of(d), x_of(d), height - 15, x_of(d), d * 100);
    double y = 30;
    for (std::size_t i = 0; i < data.deltas.size(); ++i) {
        const DeltaRow& row = data.deltas[i];
        std::string cls = row.verdict.rfind("regression", 0) == 0    ? "regression"
                          : row.verdict.rfind("improvement", 0) == 0 ? "improvement"
                                                                     : "same";
        svg += fmt::format("<g class=\"row\"><title>{}</title>",
                           xml_escape(fmt::format("experiment {} (base {}): {} - {}", row.id, row.base_id,
                                                  row.label, row.verdict),
                                      false));
        svg += label_text(k_label_width, y + 15, labels[i]);
        if (row.delta && std::isfinite(*row.delta)) {
            double x = x_of(*row.delta);
            svg += fmt::format(
                "<rect class=\"dbar {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>", cls,
                std::min(x, zero), y + 3, std::max(1.0, std::fabs(x - zero)), k_row - 6);
            svg += fmt::format(
                "<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{:+.1f}% {}</text>", plot_x + plot_w + 6,
                y + 15, *row.delta * 100,
                xml_escape(row.verdict == "no_change"              ? std::string("~")
                           : row.verdict == "insufficient_samples" ? std::string("~ too few samples")
                                                                   : row.verdict,
                           false));
        } else {
            svg += fmt::format("<text class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                               cls == "same" ? "muted" : cls + "text", plot_x, y + 15,
                               xml_escape(short_label(row.verdict, 80), false));
        }
        svg += "</g>\n";
        y += row_height(labels[i].size());
    }
    return svg + "</svg>\n";
}

}  // namespace ncclsweep::results::report
