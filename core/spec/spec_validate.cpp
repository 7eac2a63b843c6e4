// Semantic checks of a spec after parsing and overrides (docs/spec.md "Validation").
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "core/nccl/nccl.hpp"
#include "core/spec/spec_parser.hpp"
#include "core/spec/spec_yaml.hpp"

namespace ncclsweep::inline spec {
namespace {

using yaml::error_at;

bool is_env_var_name(std::string_view name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
}

bool from_command_line(const SourceMark& mark) {
    return mark.line == 0 && mark.file.rfind("--", 0) == 0;
}

/// Checks one value of a named parameter: NCCL_* values through nccl::check_value, and the
/// tpverify parameters the planner itself relies on (tp, tokens) as positive integers.
Result<void> check_value(const Spec& spec, const std::string& name, const SpecValue& value) {
    for (const auto& finding : nccl::check_value(name, value.text))
        if (finding.severity == nccl::Severity::error) return error_at(value.mark, finding.message);
    if (spec.workload.engine == "tpverify" && (name == "tp" || name == "tokens" || name == "hidden")) {
        long long number = 0;
        const std::string& text = value.text;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
        if (ec != std::errc() || end != text.data() + text.size() || number < 1 || number > 1000000)
            return error_at(value.mark, fmt::format("{}={} must be a positive whole number", name, text));
    }
    return success();
}

Result<void> check_env(const Spec& spec) {
    for (const auto& [name, value] : spec.env) {
        if (!is_env_var_name(name))
            return error_at(value.mark,
                            fmt::format("env name '{}' is not a valid environment variable name; use "
                                        "letters, digits and '_' (not starting with a digit)",
                                        name));
        if (auto ok = check_value(spec, name, value); !ok) return ok;
    }
    for (const auto& [name, value] : spec.workload.args)
        if (auto ok = check_value(spec, name, value); !ok) return ok;
    return success();
}

Result<void> check_axes(const Spec& spec) {
    std::set<std::string> names;
    for (const auto& axis : spec.axes) {
        if (auto problem = name_problem(axis.name); !problem.empty())
            return error_at(axis.mark, fmt::format("axis {}", problem));
        if (!names.insert(axis.name).second)
            return error_at(axis.mark, fmt::format("axis {} is defined twice; keep one", axis.name));
        if (axis.values.empty())
            return error_at(axis.mark, fmt::format("axis {} has no values; give at least one", axis.name));
        for (const auto& [name, value] : spec.env)
            if (name == axis.name)
                return error_at(axis.mark,
                                fmt::format("{} is both an axis and a fixed value in env: ({}); remove "
                                            "one of them",
                                            axis.name, value.mark.to_string()));
        for (const auto& [name, value] : spec.workload.args)
            if (name == axis.name)
                return error_at(axis.mark,
                                fmt::format("{} is both an axis and a fixed value in workload.args: ({}); "
                                            "remove one of them",
                                            axis.name, value.mark.to_string()));
        std::set<std::string> seen;
        for (const auto& value : axis.values) {
            if (!seen.insert(value.text).second)
                return error_at(value.mark, fmt::format("axis {} lists '{}' twice; each value once",
                                                        axis.name, value.text));
            if (auto ok = check_value(spec, axis.name, value); !ok) return ok;
        }
    }
    return success();
}

const Axis* find_axis(const Spec& spec, const std::string& name) {
    for (const auto& axis : spec.axes)
        if (axis.name == name) return &axis;
    return nullptr;
}

std::vector<std::string> axis_names(const Spec& spec) {
    std::vector<std::string> names;
    for (const auto& axis : spec.axes) names.push_back(axis.name);
    return names;
}

Result<void> check_zip(const Spec& spec) {
    std::map<std::string, std::size_t> group_of;
    for (std::size_t g = 0; g < spec.zip.size(); ++g) {
        const auto& group = spec.zip[g];
        SourceMark mark = g < spec.zip_marks.size() ? spec.zip_marks[g] : SourceMark{spec.path, 0, 0};
        if (group.size() < 2)
            return error_at(mark,
                            "a zip group needs at least two axes that advance together; remove the group or "
                            "add an axis to it");
        const Axis* first = nullptr;
        for (const auto& name : group) {
            const Axis* axis = find_axis(spec, name);
            if (!axis)
                return error_at(mark, fmt::format("zip names '{}', which is not an axis{}", name,
                                                  yaml::did_you_mean(name, axis_names(spec))));
            if (!group_of.emplace(name, g).second)
                return error_at(
                    mark, fmt::format("axis {} is in two zip groups; an axis can be zipped only once", name));
            if (!first) first = axis;
            if (axis->values.size() != first->values.size())
                return error_at(mark,
                                fmt::format("zip group [{}] needs axes of equal length, but {} has {} values "
                                            "({}) and {} has {} ({}); give them the same number of values",
                                            fmt::join(group, ", "), first->name, first->values.size(),
                                            first->mark.to_string(), axis->name, axis->values.size(),
                                            axis->mark.to_string()));
        }
    }
    return success();
}

Result<void> check_exclude(const Spec& spec) {
    for (const auto& rule : spec.exclude) {
        for (const auto& [name, values] : rule.match) {
            const Axis* axis = find_axis(spec, name);
            if (!axis)
                return error_at(rule.mark,
                                fmt::format("exclude names '{}', which is not an axis (exclude entries "
                                            "match axis values only){}",
                                            name, yaml::did_you_mean(name, axis_names(spec))));
            if (from_command_line(axis->mark) ||
                (!axis->values.empty() && from_command_line(axis->values[0].mark)))
                continue;  // the axis was replaced on the command line: values that are gone just never match
            for (const auto& value : values) {
                bool known = std::any_of(axis->values.begin(), axis->values.end(),
                                         [&](const SpecValue& v) { return v.text == value.text; });
                if (!known) {
                    std::vector<std::string> texts;
                    for (const auto& v : axis->values) texts.push_back(v.text);
                    return error_at(value.mark,
                                    fmt::format("exclude value '{}' is not a value of axis {} ({}), so it "
                                                "would never match{}",
                                                value.text, name, fmt::join(texts, ", "),
                                                yaml::did_you_mean(value.text, texts)));
                }
            }
        }
    }
    return success();
}

Result<void> check_include(const Spec& spec) {
    for (const auto& point : spec.include) {
        for (const auto& [name, value] : point.values) {
            if (auto problem = name_problem(name); !problem.empty())
                return error_at(value.mark, fmt::format("include key {}", problem));
            if (auto ok = check_value(spec, name, value); !ok) return ok;
        }
    }
    return success();
}

/// `repeats: auto` sizes the full product a nightly gate diffs; a search's race decides the
/// repeats of each point itself.
Result<void> check_auto_repeats(const Spec& spec) {
    if (!spec.auto_repeats || !spec.search.race) return success();
    return error_at(spec.auto_repeats->mark,
                    "repeats: auto cannot be combined with search.race (the race decides each point's "
                    "repeats, up to race.max_repeats); give repeats a number, or drop the race");
}

}  // namespace

Result<void> validate_spec(const Spec& spec) {
    if (auto ok = check_auto_repeats(spec); !ok) return ok;
    if (auto ok = check_env(spec); !ok) return ok;
    if (auto ok = check_axes(spec); !ok) return ok;
    if (auto ok = check_zip(spec); !ok) return ok;
    if (auto ok = check_exclude(spec); !ok) return ok;
    return check_include(spec);
}

}  // namespace ncclsweep::inline spec
