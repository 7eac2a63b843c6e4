#pragma once
// Proof of delivery: what the experiment's sitecustomize.py recorded (core/plan/render,
// delivery_marker_file) about the interpreters it ran in, read back after each run, and the
// sentence a run gets when the settings never reached its workload (failure class `delivery`).
#include <optional>
#include <string>
#include <vector>

namespace ncclsweep::inline sweep {

/// The failure class of an experiment whose settings never reached its workload.
inline constexpr const char* k_delivery_class = "delivery";
/// The warning rule under which an error of a shadowed sitecustomize.py is recorded.
inline constexpr const char* k_chained_warning = "sitecustomize_chain";
/// How much of the marker file is read.
inline constexpr std::size_t k_marker_read_limit = 1 << 20;

/// Which started command the evidence must come from.
struct DeliveryRun {
    int repeat = 0;
    std::optional<long> process_group;  ///< the command's process group on its host, when known
    std::string scheduler_task;         ///< "4242_3" on a batch scheduler, "" otherwise
};

/// What the marker file says about one run.
struct DeliveryEvidence {
    int interpreters = 0;                     ///< Python interpreters of the run that imported it
    std::vector<std::string> missing;         ///< variables one of them could not set
    std::vector<std::string> chained_errors;  ///< "PATH raised TYPE: message", one per interpreter
    /// True when at least one interpreter of the run set every variable.
    [[nodiscard]] bool delivered() const { return interpreters > 0 && missing.empty(); }
};

/// The evidence about `run` in the marker file's `text`: lines of its repeat and, when known,
/// of its scheduler task (a batch scheduler) or else its process group (other runs' lines, an
/// earlier attempt's or a client's, do not count). Malformed lines are ignored.
[[nodiscard]] DeliveryEvidence read_delivery_evidence(const std::string& text, const DeliveryRun& run);

/// The diagnosis of an experiment whose settings never reached the workload (`dir` holds its
/// sitecustomize.py): what was missing, the likely causes and what to change.
[[nodiscard]] std::string delivery_failure_cause(const DeliveryEvidence& evidence, const std::string& dir);

}  // namespace ncclsweep::inline sweep
