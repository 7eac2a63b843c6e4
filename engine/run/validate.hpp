#pragma once
// `tpverify --validate ARGS [-- ARGS]...`: judges argument lists as a run would (flags, values,
// flags that exclude each other, and whether the model splits over the ranks) without running
// anything, so ncclsweep can refuse a spec's points the engine cannot run before a sweep starts.
#include <string>
#include <vector>

namespace tpverify {

/// The verdict on one argument list.
struct Verdict {
    bool valid = true;
    std::string error;                    ///< what a run would say (empty when valid)
    std::vector<std::string> parameters;  ///< the parameters the error names, first named first
};

/// Judges one argument list (no argv[0]): parse_options, then resolve_model.
Verdict validate_args(const std::vector<std::string>& args);
/// --validate's output for `lists` (the words after --validate split at each lone "--"): one
/// JSON line per list, {"valid":true} or {"valid":false,"error":"...","parameters":[...]}.
std::string validate_json(const std::vector<std::vector<std::string>>& lists);

}  // namespace tpverify
