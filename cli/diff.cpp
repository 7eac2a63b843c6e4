// ncclsweep diff BASE NEW: a statistical comparison of two sweeps, and the CI regression gate.
#include <unistd.h>

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/spec_flags.hpp"
#include "cli/terminal.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "results/print/printers.hpp"
#include "results/query/diff.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::cli {
namespace {

struct DiffCliOptions {
    std::string base;
    std::string candidate;
    std::string db;
    std::vector<std::string> metrics;
    double alpha = results::k_default_alpha;
    std::string threshold = "3%";
    std::string format = "table";
    bool json = false;
    bool fail_on_regression = false;
};

/// "0.03", "3%" or "0" as a fraction; a bare number >= 1 is refused (it reads like a percentage).
Result<double> parse_threshold(const std::string& text) {
    std::string_view digits = text;
    const bool percent = !digits.empty() && digits.back() == '%';
    if (percent) digits.remove_suffix(1);
    double value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() ||
        !std::isfinite(value) || value < 0)
        return Error::bad_input(
            fmt::format("--threshold '{}' is not a number >= 0; write e.g. 0.03 or 3%", text));
    if (percent) return value / 100;
    if (value >= 1)
        return Error::bad_input(
            fmt::format("--threshold {} would mean {}%; write a fraction (0.03) or a "
                        "percentage with its sign ({}%)",
                        text, value * 100, text));
    return value;
}

Result<results::DiffOptions> diff_options(const DiffCliOptions& options) {
    results::DiffOptions out;
    out.alpha = options.alpha;
    auto threshold = parse_threshold(options.threshold);
    if (!threshold) return threshold.error();
    out.threshold = *threshold;
    if (!options.metrics.empty()) {
        out.metrics.clear();
        for (const auto& text : options.metrics) {
            auto metric = results::parse_metric_choice(text);
            if (!metric) return metric.error();
            out.metrics.push_back(*metric);
        }
    }
    return out;
}

ExitStatus run_diff(const DiffCliOptions& options) {
    auto format =
        options.json ? Result<results::Format>(results::Format::json) : results::parse_format(options.format);
    if (!format) return report_error(format.error());
    auto settings = diff_options(options);
    if (!settings) return report_error(settings.error());
    auto store = open_for_reading(options.db);
    if (!store) return report_error(store.error());
    auto diff = results::diff_sweeps(*store, options.base, options.candidate, *settings);
    if (!diff) return report_error(diff.error());

    std::string text;
    results::Output out(text);
    results::make_printer(*format, out, terminal_columns(STDOUT_FILENO))->print_diff(*diff);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (diff->has_regression() && options.fail_on_regression) {
        NCCLSWEEP_LOG(error,
                      "{} regressed from sweep {} to sweep {}; failing because of --fail-on-regression ({})",
                      count_of(static_cast<std::size_t>(diff->counts.regressions), "experiment"),
                      diff->base.id, diff->candidate.id,
                      *format == results::Format::json ? "the JSON on stdout lists them under \"experiments\""
                                                       : "the list is above");
        return ExitStatus::negative;
    }
    return ExitStatus::done;
}

}  // namespace

Command setup_diff(CLI::App& app) {
    auto options = std::make_shared<DiffCliOptions>();
    CLI::App* sub = app.add_subcommand(
        "diff",
        "Compare two sweeps experiment by experiment (matched by canonical key): medians, delta, a\n"
        "Mann-Whitney U test, and a verdict per metric; status changes (ok -> failed is a regression);\n"
        "points on one side only; a geometric-mean row. A change counts only when it is significant\n"
        "(p <= --alpha) AND larger than --threshold; otherwise it is shown as \"~\".\n"
        "  ncclsweep diff 3 4\n"
        "  ncclsweep diff latest:nightly~1 latest:nightly --fail-on-regression\n"
        "  ncclsweep diff 3 4 --metric tok_s --metric verify_us_p50 --format markdown\n"
        "Exit status: 0 done (no regression, or no --fail-on-regression), 1 a regression with\n"
        "--fail-on-regression, 2 bad flags or unknown sweep/metric, 3 database error.");
    sub->add_option("BASE", options->base, "Base sweep: id, latest~N, latest:TAG, latest:TAG~N")->required();
    sub->add_option("NEW", options->candidate, "New sweep, same forms (e.g. latest)")->required();
    add_db_flag(*sub, options->db);
    sub->add_option(
        "--metric", options->metrics,
        "Metric to compare (repeatable; default tok_s). NAME:lower / NAME:higher sets which way is "
        "better; names with _us, _ms, latency ... are lower-is-better by default");
    sub->add_option("--alpha", options->alpha, "Significance level of the U test (default 0.05)");
    sub->add_option("--threshold", options->threshold,
                    "Smallest change that counts, as a fraction or percentage (default 3%, e.g. 0.05 or 5%)");
    sub->add_option("--format", options->format, "table (default), markdown (for a PR comment) or json");
    sub->add_flag("--json", options->json, "Same as --format json");
    sub->add_flag("--fail-on-regression", options->fail_on_regression,
                  "Exit 1 when any experiment regressed (a metric or ok -> failed/timed_out)");
    return Command{sub, [options]() { return run_diff(*options); }};
}

}  // namespace ncclsweep::cli
