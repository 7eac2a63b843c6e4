#pragma once
// Points of a plan the engine cannot run (`tpverify --validate`): a value that fits its own type
// and range but not the rest of the point, e.g. `tp: 3` for a model whose 64 heads do not split
// over 3 ranks, or `topology` with `backend: cuda`. Checked before anything runs.
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/experiment.hpp"
#include "core/result.hpp"
#include "core/spec/spec.hpp"
#include "core/target.hpp"

namespace ncclsweep::inline spec {

/// One distinct engine command line of a plan and the first experiment that runs it.
struct EngineRun {
    int experiment_id = 0;
    std::vector<Assignment> workload;  ///< that experiment's workload parameters
    std::vector<std::string> args;     ///< its argv without the program
};

/// The distinct engine command lines of a plan, gathered one experiment at a time while the plan
/// is walked (so the plan need not be held in memory to ask the engine about it).
class EngineRunSet {
public:
    /// Keeps `experiment`'s command line when no experiment before it had the same one (shell
    /// commands and empty argv are not engine runs).
    void add(const Experiment& experiment);
    /// The distinct command lines so far, in plan order.
    [[nodiscard]] const std::vector<EngineRun>& runs() const { return m_runs; }

private:
    std::vector<EngineRun> m_runs;
    std::unordered_set<std::string> m_seen;  ///< each run's args, joined with '\0'
    std::string m_key;                       ///< scratch: the args of the experiment being added
};

/// The distinct engine command lines of `experiments`, in plan order.
[[nodiscard]] std::vector<EngineRun> distinct_engine_runs(const std::vector<Experiment>& experiments);

/// Reads `engine --validate`'s verdicts (one JSON line per run, in order) and refuses the first
/// run the engine cannot run: bad_input at the place `spec` set the value of the first parameter
/// the verdict names (a lower_case axis value, a fixed arg, an include point, or the --set/--axis
/// flag), with the engine's own reason and the experiment. Infrastructure error when the output
/// is not one verdict per run.
[[nodiscard]] Result<void> judge_engine_runs(const Spec& spec, const std::vector<EngineRun>& runs,
                                             std::string_view verdicts, std::string_view engine);

/// Runs `engine_path --validate` on `target` over the distinct command lines `runs` (batches of
/// 64) and judges the verdicts. An infrastructure error when the engine cannot say
/// (it predates --validate, or cannot run): callers decide whether that stops them.
[[nodiscard]] Result<void> validate_engine_runs(const Spec& spec, const std::vector<EngineRun>& runs,
                                                Target& target, const std::string& engine_path);

}  // namespace ncclsweep::inline spec
