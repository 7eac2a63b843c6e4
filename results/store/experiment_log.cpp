// The recorded lines of one experiment, for `ncclsweep results log`.
#include "results/store/experiment_log.hpp"

#include <fmt/format.h>

namespace ncclsweep::results {

Result<const StoredExperiment*> find_experiment(const LoadedSweep& sweep, int exp_id) {
    for (const auto& stored : sweep.experiments)
        if (stored.experiment.id == exp_id) return &stored;
    if (sweep.experiments.empty())
        return Error::bad_input(
            fmt::format("sweep {} has no experiments, so there is no experiment {}", sweep.info.id, exp_id));
    return Error::bad_input(
        fmt::format("sweep {} has no experiment {}: its experiments are {}..{} "
                    "(`ncclsweep results show {}` lists them)",
                    sweep.info.id, exp_id, sweep.experiments.front().experiment.id,
                    sweep.experiments.back().experiment.id, sweep.info.id));
}

std::string experiment_log_text(const LoadedSweep& sweep, const StoredExperiment& stored) {
    const auto& o = stored.outcome;
    std::string out =
        fmt::format("sweep {} experiment {}: {}", sweep.info.id, stored.experiment.id, to_string(o.status));
    if (!o.failure_class.empty()) out += fmt::format(" ({})", o.failure_class);
    if (o.detected_after_s) out += fmt::format(", detected {:.3f} s after start", *o.detected_after_s);
    out += '\n';
    if (o.diagnosis.empty()) {
        out += o.status == ExperimentStatus::ok
                   ? "no lines were kept: lines are recorded only around a failure\n"
                   : "no lines were recorded\n";
    } else {
        out += o.diagnosis;
        if (out.back() != '\n') out += '\n';
    }
    if (o.exit_signal)
        out += fmt::format("exit: killed by signal {}\n", *o.exit_signal);
    else if (o.exit_code)
        out += fmt::format("exit: status {}\n", *o.exit_code);
    // Warnings are kept for every experiment, ok or not (an error of a sitecustomize.py the
    // sweep's shadowed, NCCL WARN lines).
    if (!o.events.empty()) out += "warnings:\n";
    for (const auto& event : o.events) out += fmt::format("  {}: {}\n", event.code, event.message);
    return out;
}

}  // namespace ncclsweep::results
