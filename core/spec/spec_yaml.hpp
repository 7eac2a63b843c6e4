#pragma once
// Internal helpers of the spec parser: yaml-cpp nodes -> located values and located errors.
// yaml-cpp is wrapped here so that no yaml-cpp exception leaves core/.
#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline spec::yaml {

/// Reading context: the file name and the mark to use when a node has none (null values).
struct Where {
    const std::string* file = nullptr;
    SourceMark fallback;
};

/// The 1-based mark of `node`, or `where.fallback` when yaml-cpp has none for it.
SourceMark mark_of(const YAML::Node& node, const Where& where);

/// The context for reading the value of the map entry whose key is `key_node`: same file, the
/// key's mark as the fallback (a null value has no mark of its own).
Where inner(const Where& where, const YAML::Node& key_node);

/// A bad_input Error "mark: what".
Error error_at(const SourceMark& mark, std::string_view what);

/// "; did you mean 'x'?" for the closest candidate within a small edit distance, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// Checks that `node` is a map whose keys are scalars, unique and all in `allowed`;
/// `section` names the map in messages ("top level", "target", ...).
Result<void> check_map(const YAML::Node& node, const Where& where, std::string_view section,
                       const std::vector<std::string>& allowed);

/// Checks that `node` is a map with unique scalar keys (any names).
Result<void> check_open_map(const YAML::Node& node, const Where& where, std::string_view section);

/// A scalar value as text with its mark; `what` names it in messages ("sweep", "axes.NCCL_ALGO[2]").
Result<SpecValue> read_scalar(const YAML::Node& node, const Where& where, std::string_view what);

/// A scalar that must be a boolean (true/false/yes/no/on/off).
Result<bool> read_bool(const YAML::Node& node, const Where& where, std::string_view what);

/// A scalar that must be an integer in [low, high].
Result<long long> read_int(const YAML::Node& node, const Where& where, std::string_view what, long long low,
                           long long high);

/// A duration in seconds: a non-negative number, optionally with a unit suffix s, m or h.
Result<double> read_seconds(const YAML::Node& node, const Where& where, std::string_view what);

/// A string or a list of strings (command forms); `is_shell` is set for the string form.
Result<std::vector<SpecValue>> read_command(const YAML::Node& node, const Where& where, std::string_view what,
                                            bool& is_shell);

/// Checks that `pattern` is a valid RE2 regex, with `groups` capturing groups (-1 = any).
Result<void> check_regex(const std::string& pattern, const SourceMark& mark, std::string_view what,
                         int groups);

}  // namespace ncclsweep::inline spec::yaml
