#pragma once
// Printers for `results` and `diff`: one interface, three formats (nvbench-style). A table for
// people, markdown for a pull-request comment, JSON (versioned, "schema" field) for machines.
// Printers write to an Output the caller owns: the CLI passes stdout, tests a std::string.
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "results/query/diff.hpp"
#include "results/query/query.hpp"
#include "results/store/records.hpp"

namespace ncclsweep::results {

/// Output formats.
enum class Format { table, markdown, json };

/// Parses "table", "markdown" (or "md") and "json"; the error lists the formats.
[[nodiscard]] Result<Format> parse_format(std::string_view text);

/// Where a printer writes: a FILE* (the CLI passes stdout) or a string (tests, composition).
class Output {
public:
    /// Writes to `file` (not owned).
    explicit Output(std::FILE* file) : m_file(file) {}
    /// Appends to `text` (not owned).
    explicit Output(std::string& text) : m_text(&text) {}
    /// Writes `text` as is.
    void write(std::string_view text);

private:
    std::FILE* m_file = nullptr;
    std::string* m_text = nullptr;
};

/// JSON schema names printed in the "schema" field of each document (bumped on breaking change).
inline constexpr const char* k_sweeps_schema = "ncclsweep.sweeps/1";
inline constexpr const char* k_sweep_schema = "ncclsweep.sweep/1";
inline constexpr const char* k_best_schema = "ncclsweep.best/2";
inline constexpr const char* k_diff_schema = "ncclsweep.diff/1";

/// One printer: each call writes one complete document (a JSON printer writes one object).
class Printer {
public:
    virtual ~Printer() = default;
    /// `results list`: sweeps newest first with their counts.
    virtual void print_sweeps(std::span<const SweepInfo> sweeps) = 0;
    /// `results show`: every experiment of a sweep.
    virtual void print_table(const SweepTable& table) = 0;
    /// `results best`: the best experiment and its margin over the runner-up.
    virtual void print_best(const BestExperiment& best) = 0;
    /// `diff`: per-metric comparisons, status changes, one-side points and the summary.
    virtual void print_diff(const SweepDiff& diff) = 0;
};

/// A printer of `format` writing to `out` (which must outlive it). `columns` > 0: the width of
/// the terminal the table goes to; tables then narrow their free-text columns (parameter values,
/// diagnoses) to fit it. 0 (output not to a terminal, markdown, JSON): nothing is cut.
[[nodiscard]] std::unique_ptr<Printer> make_printer(Format format, Output& out, int columns = 0);

}  // namespace ncclsweep::results
