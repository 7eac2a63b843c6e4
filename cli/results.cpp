// ncclsweep results list|show|best|log: read sweeps back from the database (log: cli/results_log.cpp).
#include <unistd.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/results_log.hpp"
#include "cli/spec_flags.hpp"
#include "cli/terminal.hpp"
#include "results/print/printers.hpp"
#include "results/query/query.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::cli {
namespace {

enum class ResultsAction { list, show, best, log };

struct ResultsOptions {
    std::string db;
    std::string format = "table";
    bool json = false;
    std::string tag;                   // list
    int limit = 0;                     // list
    std::string sweep = "latest";      // show, best
    std::string sort;                  // show
    std::vector<std::string> columns;  // show
    std::string metric = "tok_s";      // best
};

ExitStatus run_results(const ResultsOptions& options, ResultsAction action) {
    auto format =
        options.json ? Result<results::Format>(results::Format::json) : results::parse_format(options.format);
    if (!format) return report_error(format.error());
    if (options.limit < 0) return report_error(Error::bad_input("--limit must be >= 0 (0 = all sweeps)"));
    auto store = open_for_reading(options.db);
    if (!store) return report_error(store.error());
    std::string text;
    results::Output out(text);
    auto printer = results::make_printer(*format, out, terminal_columns(STDOUT_FILENO));

    if (action == ResultsAction::list) {
        auto sweeps = store->list_sweeps(options.tag, options.limit);
        if (!sweeps) return report_error(sweeps.error());
        if (sweeps->empty() && !options.tag.empty() && *format != results::Format::json)
            text = "no sweep tagged '" + options.tag + "' in " + store->path() +
                   "; `ncclsweep results list` shows every sweep\n";
        else
            printer->print_sweeps(*sweeps);
    } else {
        auto table = results::load_sweep_table(*store, options.sweep);
        if (!table) return report_error(table.error());
        if (action == ResultsAction::show) {
            if (!options.columns.empty()) {
                table->columns.clear();
                for (const auto& column : options.columns) {
                    if (auto ok = results::require_metric(*table, column); !ok)
                        return report_error(ok.error());
                    table->columns.push_back(column);
                }
            }
            if (!options.sort.empty()) {
                auto metric = results::parse_metric_choice(options.sort);
                if (!metric) return report_error(metric.error());
                if (auto ok =
                        results::sort_rows(*table, results::resolve_metric(*metric, table->sweep.record));
                    !ok)
                    return report_error(ok.error());
            }
            printer->print_table(*table);
        } else {
            auto metric = results::parse_metric_choice(options.metric);
            if (!metric) return report_error(metric.error());
            auto best =
                results::best_experiment(*table, results::resolve_metric(*metric, table->sweep.record));
            if (!best) return report_error(best.error());
            printer->print_best(*best);
        }
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    return ExitStatus::done;
}

void add_output_flags(CLI::App& app, ResultsOptions& options) {
    add_db_flag(app, options.db);
    app.add_option("--format", options.format, "table (default), markdown or json");
    app.add_flag("--json", options.json, "Same as --format json: one JSON document on stdout");
}

}  // namespace

Command setup_results(CLI::App& app) {
    auto options = std::make_shared<ResultsOptions>();
    auto action = std::make_shared<ResultsAction>(ResultsAction::list);
    CLI::App* sub = app.add_subcommand(
        "results",
        "Read recorded sweeps back: list them, show one experiment per row (median, 95% interval, n,\n"
        "status, diagnosis, effective NCCL config), or name the best one. SWEEP is an id, latest,\n"
        "latest~N, latest:TAG or latest:TAG~N.\n"
        "  ncclsweep results list --tag nightly\n"
        "  ncclsweep results show latest --sort tok_s\n"
        "  ncclsweep results best 3 --metric verify_us_p50\n"
        "  ncclsweep results log latest 4\n"
        "Exit status: 0 done, 2 bad flags or unknown sweep/metric, 3 database error.");
    sub->require_subcommand(1);

    CLI::App* list = sub->add_subcommand("list", "Sweeps, newest first, with experiment counts");
    add_output_flags(*list, *options);
    list->add_option("--tag", options->tag, "Only sweeps with this tag");
    list->add_option("--limit", options->limit, "At most this many sweeps (0 = all)");
    list->callback([action]() { *action = ResultsAction::list; });

    CLI::App* show = sub->add_subcommand("show", "Every experiment of a sweep");
    show->add_option("SWEEP", options->sweep, "Sweep reference (default latest)");
    add_output_flags(*show, *options);
    show->add_option("--sort", options->sort,
                     "Sort best first by this metric (NAME, NAME:higher or NAME:lower; e.g. tok_s)");
    show->add_option("--metric", options->columns,
                     "Metric column to show (repeatable; default tok_s and verify_us_p50)");
    show->callback([action]() { *action = ResultsAction::show; });

    CLI::App* best = sub->add_subcommand("best", "The best experiment of a sweep by one metric");
    best->add_option("SWEEP", options->sweep, "Sweep reference (default latest)");
    add_output_flags(*best, *options);
    best->add_option("--metric", options->metric,
                     "Metric that decides (default tok_s; NAME:lower / NAME:higher sets the direction)");
    best->callback([action]() { *action = ResultsAction::best; });

    auto log_options = std::make_shared<ResultsLogOptions>();
    setup_results_log(*sub, *log_options)->callback([action]() { *action = ResultsAction::log; });

    return Command{sub, [options, action, log_options]() {
                       return *action == ResultsAction::log ? run_results_log(*log_options)
                                                            : run_results(*options, *action);
                   }};
}

}  // namespace ncclsweep::cli
