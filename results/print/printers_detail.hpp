#pragma once
// Internal to results/printers*.cpp: the grid that table and markdown share, value formatting,
// and the printer classes. Not part of the library's public surface.
#include <string>
#include <string_view>
#include <vector>

#include "core/stats/stats.hpp"
#include "results/print/printers.hpp"

namespace ncclsweep::results::detail {

/// How a text document is laid out: aligned columns for a terminal, or GitHub markdown.
enum class Style { table, markdown };

/// Column alignment.
enum class Align { left, right };

/// Whether a column's cells may be cut to make a table fit the terminal: free text (parameter
/// values, diagnoses) may, numbers, statuses and verdicts never.
enum class Cut { never, to_fit };

/// A table: header cells, alignment per column, rows of cells (short rows are padded).
struct Grid {
    std::vector<std::string> header;
    std::vector<Align> align;
    std::vector<Cut> cut;
    std::vector<std::vector<std::string>> rows;
    /// Adds a column.
    void column(std::string name, Align a = Align::left, Cut c = Cut::never) {
        header.push_back(std::move(name));
        align.push_back(a);
        cut.push_back(c);
    }
};

/// Renders `grid`: aligned with two spaces between columns (table), or a pipe table with
/// `|` escaped (markdown). Control characters in cells become spaces. With `max_width` > 0
/// (a terminal's width; table layout only) a table wider than that has its `Cut::to_fit`
/// columns narrowed, the last one first, each to no less than 12 columns, and their longer
/// cells (header included) cut with "..."; what cannot be narrowed stays whole (the terminal
/// wraps it) rather than hide a number. Markdown and `max_width` 0 are never cut.
[[nodiscard]] std::string render_grid(const Grid& grid, Style style, int max_width = 0);

/// Number for people: 4 significant digits below 1000, whole numbers above; "-" for NaN.
[[nodiscard]] std::string format_value(double value);
/// Signed percentage of a fraction with one decimal ("+3.1%", "-12.0%"); "-" for NaN.
[[nodiscard]] std::string format_delta(double fraction);
/// p-value: three decimals, or scientific below 0.001; "-" for NaN.
[[nodiscard]] std::string format_p(double p);
/// 95% interval of a summary as "[low, high]", or "n<6" when it does not exist (too few samples).
[[nodiscard]] std::string format_interval(const stats::Summary& summary);
/// Relative half-width of the 95% interval as "±1.2%", "" without an interval.
[[nodiscard]] std::string format_spread(const stats::Summary& summary);
/// The ± cell, always filled: the 95% interval's relative half-width ("±1.2%"); with fewer
/// samples than an interval needs, half the min-max range marked "¹" (and `few` set), or "-¹"
/// for a single sample; "-" without samples.
[[nodiscard]] std::string format_spread_marked(const stats::Summary& summary, bool& few);
/// The footnote of the "¹" mark, one line.
[[nodiscard]] std::string few_samples_footnote();
/// "tok_s [tok/s]": a metric's column header with its unit when the sweep declared one.
[[nodiscard]] std::string metric_header(const std::string& metric, const SweepRecord& record);
/// "name=value name=value" of assignments.
[[nodiscard]] std::string format_assignments(const std::vector<Assignment>& assignments);
/// `'name' [tag]` of a sweep, e.g. "sweep 3 'nightly' [nightly]".
[[nodiscard]] std::string describe_sweep(const SweepInfo& sweep);

/// Table and markdown printer (one code path, two layouts).
class TextPrinter final : public Printer {
public:
    /// `columns`: the terminal's width, tables are fitted to it (0 = not a terminal: never cut).
    TextPrinter(Style style, Output& out, int columns = 0) : m_style(style), m_out(out), m_columns(columns) {}
    void print_sweeps(std::span<const SweepInfo> sweeps) override;
    void print_table(const SweepTable& table) override;
    void print_best(const BestExperiment& best) override;
    void print_diff(const SweepDiff& diff) override;

private:
    void heading(std::string_view text);
    void line(std::string_view text);
    void grid(const Grid& grid);
    void diff_metric(const SweepDiff& diff, std::size_t index);
    void diff_status(const SweepDiff& diff);
    void diff_one_side(const SweepDiff& diff);
    void diff_summary(const SweepDiff& diff);

    Style m_style;
    Output& m_out;
    int m_columns = 0;
};

/// JSON printer: one object per call, pretty-printed, with a "schema" field.
class JsonPrinter final : public Printer {
public:
    explicit JsonPrinter(Output& out) : m_out(out) {}
    void print_sweeps(std::span<const SweepInfo> sweeps) override;
    void print_table(const SweepTable& table) override;
    void print_best(const BestExperiment& best) override;
    void print_diff(const SweepDiff& diff) override;

private:
    Output& m_out;
};

}  // namespace ncclsweep::results::detail
