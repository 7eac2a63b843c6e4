#pragma once
// ncclsweep results log SWEEP EXP (a subcommand of `results`, in its own file).
#include <CLI/CLI.hpp>

#include <string>

#include "core/exit_status.hpp"

namespace ncclsweep::cli {

/// Options of `results log`.
struct ResultsLogOptions {
    std::string db;
    std::string sweep = "latest";
    int experiment = 0;
};

/// Adds `log` under the `results` subcommand; `on_select` runs when it is chosen.
CLI::App* setup_results_log(CLI::App& results, ResultsLogOptions& options);
/// Prints the experiment's recorded lines. 0 done, 2 unknown sweep/experiment, 3 database error.
ExitStatus run_results_log(const ResultsLogOptions& options);

}  // namespace ncclsweep::cli
