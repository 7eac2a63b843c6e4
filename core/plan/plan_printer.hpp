#pragma once
// Printers of a plan (table for people, JSON for tools). Both stream: a 1,000,000-point plan
// is written experiment by experiment, never built in memory.
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "core/experiment.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/planner.hpp"
#include "core/result.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline plan {

/// Output format of `ncclsweep plan`.
enum class PlanFormat { table, json };

/// Receives a plan in one pass: begin, every experiment in order, end.
class PlanPrinter {
public:
    virtual ~PlanPrinter() = default;
    /// Before the first experiment.
    virtual void begin(const Spec& spec, const PlanSummary& summary) = 0;
    /// One experiment and the number of warning groups that mention it.
    virtual void experiment(const Experiment& experiment, int warnings) = 0;
    /// After the last experiment: the grouped warnings.
    virtual void end(const PlanSummary& summary) = 0;
};

/// A printer writing `format` to `out`.
[[nodiscard]] std::unique_ptr<PlanPrinter> make_plan_printer(PlanFormat format, std::ostream& out);

/// Walks the plan again (after check_plan produced `summary`) and feeds `printer`.
[[nodiscard]] Result<void> print_plan(const Spec& spec, const PlanOptions& options,
                                      const PlanSummary& summary, PlanPrinter& printer);

/// A value as shown in a table cell: control characters escaped (\n, \t, \xHH), at most
/// `max_chars` characters (UTF-8 aware, "…" marks a cut).
[[nodiscard]] std::string display_cell(const std::string& value, std::size_t max_chars = 40);

/// Appends `text` as a JSON string literal (control characters escaped; bytes that are not
/// UTF-8 become U+FFFD, which cannot happen for values read from a spec).
void append_json_string(std::string& out, std::string_view text);

/// Number of characters (UTF-8 code points) in `text`.
[[nodiscard]] std::size_t display_width(const std::string& text);

}  // namespace ncclsweep::inline plan
