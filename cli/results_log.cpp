// ncclsweep results log SWEEP EXP: what the watcher recorded around one experiment's failure.
#include "cli/results_log.hpp"

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/spec_flags.hpp"
#include "results/store/experiment_log.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::cli {

CLI::App* setup_results_log(CLI::App& results, ResultsLogOptions& options) {
    CLI::App* log = results.add_subcommand("log",
                                           "The lines recorded for one experiment: its cause, the lines "
                                           "before and after the fatal line, its exit");
    log->add_option("SWEEP", options.sweep, "Sweep reference (id, latest, latest~N, latest:TAG)")->required();
    log->add_option("EXP", options.experiment, "Experiment id (as `results show` lists them)")->required();
    add_db_flag(*log, options.db);
    return log;
}

ExitStatus run_results_log(const ResultsLogOptions& options) {
    auto store = open_for_reading(options.db);
    if (!store) return report_error(store.error());
    auto sweep = store->load_sweep(options.sweep);
    if (!sweep) return report_error(sweep.error());
    auto stored = results::find_experiment(*sweep, options.experiment);
    if (!stored) return report_error(stored.error());
    const std::string text = results::experiment_log_text(*sweep, **stored);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return ExitStatus::done;
}

}  // namespace ncclsweep::cli
