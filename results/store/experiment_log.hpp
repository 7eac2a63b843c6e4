#pragma once
// `ncclsweep results log SWEEP EXP`: the lines the watcher recorded for one experiment.
#include <string>

#include "core/result.hpp"
#include "results/store/records.hpp"

namespace ncclsweep::results {

/// Experiment `exp_id` of `sweep`; bad_input naming the sweep and its id range when absent.
[[nodiscard]] Result<const StoredExperiment*> find_experiment(const LoadedSweep& sweep, int exp_id);

/// Readable account of one experiment's end: status and class, the stored diagnosis (its first
/// line says the cause; then the lines before the fatal line, the line itself marked '>', the
/// lines after it), how the process exited, and the warnings recorded for it (rule: line). An
/// experiment that ended well kept no lines, only its warnings.
[[nodiscard]] std::string experiment_log_text(const LoadedSweep& sweep, const StoredExperiment& stored);

}  // namespace ncclsweep::results
