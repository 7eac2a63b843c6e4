// ncclsweep export SWEEP --format F: a stored sweep as json/csv/md/junit, or one point of it as
// sitecustomize.py, env file, tuner profile or NCCL example tuner-plugin lines. Parses flags; results/export
// does the work.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/spec_flags.hpp"
#include "results/export/exports.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::cli {
namespace {

struct ExportOptions {
    std::string sweep;
    std::string format = "json";
    bool best = false;
    std::string metric = "tok_s";
    int experiment = 0;
    bool experiment_given = false;
    std::string output;
    std::string db;
    bool json = false;
    bool format_given = false;
    bool force = false;
};

ExitStatus run_export(const ExportOptions& options) {
    namespace ex = results::exports;
    if (options.json && options.format_given && options.format != "json")
        return report_error(Error::bad_input(fmt::format(
            "--json and --format {} disagree: --json is --format json; give one of them", options.format)));
    auto format = ex::parse_format(options.json ? std::string("json") : options.format);
    if (!format) return report_error(format.error());
    auto store = open_for_reading(options.db);
    if (!store) return report_error(store.error());
    auto sweep = store->load_sweep(options.sweep);
    if (!sweep) return report_error(sweep.error());
    ex::ExportRequest request;
    request.format = *format;
    request.metric = options.metric;
    request.best = options.best;
    request.force = options.force;
    if (options.experiment_given) request.experiment = options.experiment;
    auto text = ex::export_sweep(*sweep, request);
    if (!text) return report_error(text.error());
    if (auto written = write_output(options.output, *text); !written) return report_error(written.error());
    return ExitStatus::done;
}

}  // namespace

Command setup_export(CLI::App& app) {
    auto options = std::make_shared<ExportOptions>();
    CLI::App* sub = app.add_subcommand(
        "export",
        "Export a stored sweep: every experiment as json, csv, md or junit, or one point (the best, or\n"
        "--experiment ID) as a sitecustomize.py, an env file or lines for NCCL's example tuner plugin.\n"
        "  ncclsweep export latest --format junit -o sweep.xml\n"
        "  ncclsweep export latest:nightly --format sitecustomize --best -o sitecustomize.py\n"
        "  ncclsweep export 7 --format nccl-tuner --experiment 12 -o nccl_tuner.conf\n"
        "Exit status: 0 written, 2 bad flags or nothing to export, 3 database or file error.\n"
        "See docs/export.md.");
    sub->add_option("SWEEP", options->sweep, "Sweep: id, latest, latest~N, latest:TAG, latest:TAG~N")
        ->required();
    sub->add_option("--format", options->format,
                    "json, csv, md, junit, sitecustomize, env, tuner-profile or nccl-tuner (default json)");
    sub->add_flag("--json", options->json,
                  "Same as --format json (the default): every experiment, versioned JSON");
    sub->add_flag("--best", options->best, "Point formats: export the best experiment by --metric");
    sub->add_option("--metric", options->metric, "Metric for --best and the md table (default tok_s)");
    sub->add_option("--experiment", options->experiment, "Point formats: export this experiment id");
    sub->add_flag("--force", options->force,
                  "Point formats: export a point that did not run to a result (failed, timed out, pruned);\n"
                  "the file then says so in its first lines");
    sub->add_option("-o,--output", options->output, "Write to FILE (atomically) instead of stdout");
    add_db_flag(*sub, options->db);
    sub->callback([sub, options]() {
        options->experiment_given = sub->count("--experiment") > 0;
        options->format_given = sub->count("--format") > 0;
    });
    return Command{sub, [options]() { return run_export(*options); }};
}

}  // namespace ncclsweep::cli
