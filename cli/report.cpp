// ncclsweep report SWEEP [--vs BASE] -o report.html: the self-contained visual report.
// Parses flags; results/report_html builds and renders it.
#include "cli/commands.hpp"
#include "cli/spec_flags.hpp"
#include "results/report/report_html.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::cli {
namespace {

struct ReportOptions {
    std::string sweep;
    std::string vs;
    std::string metric = "tok_s";
    std::vector<std::string> heatmap;
    std::string output;
    std::string db;
};

ExitStatus run_report(const ReportOptions& options) {
    namespace ex = results::exports;
    auto store = open_for_reading(options.db);
    if (!store) return report_error(store.error());
    auto sweep = store->load_sweep(options.sweep);
    if (!sweep) return report_error(sweep.error());
    std::optional<ex::SweepData> base;
    if (!options.vs.empty()) {
        auto loaded = store->load_sweep(options.vs);
        if (!loaded) return report_error(loaded.error());
        base = std::move(*loaded);
    }
    results::report::ReportOptions report_options;
    report_options.metric = options.metric;
    report_options.heatmap_axes = options.heatmap;
    auto data = results::report::build_report(*sweep, base ? &*base : nullptr, report_options);
    if (!data) return report_error(data.error());
    std::string html = results::report::render_html(*data);
    if (auto written = write_output(options.output, html); !written) return report_error(written.error());
    return ExitStatus::done;
}

}  // namespace

Command setup_report(CLI::App& app) {
    auto options = std::make_shared<ReportOptions>();
    CLI::App* sub = app.add_subcommand(
        "report",
        "Write a self-contained HTML report of a sweep (no network needed to view it): the metric per\n"
        "configuration with intervals, a heat map over two parameters, failures by class and, with\n"
        "--vs, the change of every experiment against a base sweep.\n"
        "  ncclsweep report latest -o report.html\n"
        "  ncclsweep report latest:nightly --vs latest:nightly~1 --heatmap NCCL_ALGO,tokens -o report.html\n"
        "Exit status: 0 written, 2 bad flags, 3 database or file error. See docs/export.md.");
    sub->add_option("SWEEP", options->sweep, "Sweep: id, latest, latest~N, latest:TAG, latest:TAG~N")
        ->required();
    sub->add_option("--vs", options->vs, "Base sweep to compare with (matched by canonical key)");
    sub->add_option("--metric", options->metric, "Metric to draw (default tok_s)");
    sub->add_option("--heatmap", options->heatmap, "Two parameters for the heat map, e.g. NCCL_ALGO,tokens")
        ->delimiter(',')
        ->expected(2);
    sub->add_option("-o,--output", options->output, "HTML file to write ('-' = stdout)")->required();
    add_db_flag(*sub, options->db);
    return Command{sub, [options]() { return run_report(*options); }};
}

}  // namespace ncclsweep::cli
