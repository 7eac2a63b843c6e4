#pragma once
// Points that are not deployable settings (what-ifs) and what a point's collective times rest
// on, in the words every output uses (results show/best, run's summary, the report, exports).
#include <optional>
#include <string>
#include <string_view>

#include "results/query/query.hpp"
#include "results/store/records.hpp"

namespace ncclsweep::results {

/// The metric tpverify reports only when its fused all-reduce + RMSNorm kernel ran.
inline constexpr std::string_view k_fused_metric = "fused_us";

/// True when the experiment ran a kernel no NCCL setting deploys: tpverify's fused all-reduce
/// (it reported `fused_us`). Such a point needs a server change; it is a what-if.
[[nodiscard]] bool is_what_if(const StoredExperiment& experiment);

/// For people: "" for calibrated (or a label the engine did not give), else what the label means,
/// e.g. "collective times relative: NCCL's choice for this point was not measured; the model
/// scaled a measured choice" (for a what-if point: its fused kernel's published price).
[[nodiscard]] std::string collective_times_note(std::string_view label, bool what_if = false);

/// What the recommendation line adds when its point is not calibrated: "; NOT calibrated:
/// collective times relative (...)" ("" when calibrated or unlabelled).
[[nodiscard]] std::string recommendation_caveat(const ExperimentRow& best);

/// "what-if: a server with a fused all-reduce would gain +44.2 % tok_s over the recommendation,
/// experiment 1 (experiment 2: fusion=on, its fused all-reduce at 23.7 us per call, collective
/// times relative); no NCCL setting deploys it: ..." — nullopt without an ok what-if point.
[[nodiscard]] std::optional<std::string> what_if_line(const BestExperiment& best);

}  // namespace ncclsweep::results
