#pragma once
// YAML spec -> ncclsweep::Spec (docs/spec.md). Every error is bad_input and reads
// "file:line:col: what is wrong; what to do".
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline spec {

/// Parses spec text; `path` is used in marks and as the default sweep name (its stem).
/// Checks syntax, keys and types; semantic checks are validate_spec's.
[[nodiscard]] Result<Spec> parse_spec(const std::string& text, const std::string& path);

/// Reads the file at `path` and parses it (bad_input when it cannot be read).
[[nodiscard]] Result<Spec> load_spec(const std::string& path);

/// Parses a budget: a duration ("2h", "90m", "600s", "600") or a run count ("60 runs",
/// "60runs"); bad_input naming `what` (e.g. "--budget") and the accepted forms otherwise.
[[nodiscard]] Result<Budget> parse_budget(std::string_view text, std::string_view what);

/// Semantic checks of a parsed (and possibly overridden) spec: axis names, env/arg/axis
/// clashes, zip groups, exclude and include entries, and every NCCL_* value through
/// nccl::check_value. Fails with the first problem, located at its mark.
[[nodiscard]] Result<void> validate_spec(const Spec& spec);

/// What a parameter name means: environment variable, workload parameter, or invalid.
enum class NameKind { env, workload, invalid };

/// Classifies `name`: [A-Za-z_][A-Za-z0-9_]*, with no lower-case letter (env) or no
/// upper-case letter (workload); mixed-case and other names are invalid.
[[nodiscard]] NameKind classify_name(std::string_view name);

/// Error text for an invalid name (what is wrong and how to write it), "" for a valid one.
[[nodiscard]] std::string name_problem(std::string_view name);

}  // namespace ncclsweep::inline spec
