// YAML -> Spec: syntax, keys and types (semantic checks are in core/spec/spec_validate.cpp).
#include "core/spec/spec_parser.hpp"
#include "core/text.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/spec/spec_sections.hpp"
#include "core/spec/spec_yaml.hpp"

namespace ncclsweep::inline spec {
namespace {

using namespace yaml;

const std::vector<std::string> k_top_level_keys = {"sweep",   "target",   "workload", "env",
                                                   "axes",    "zip",      "exclude",  "include",
                                                   "repeats", "timeouts", "search",   "baseline"};

SourceMark mark_at_offset(const std::string& text, std::size_t offset, const std::string& file) {
    SourceMark mark{file, 1, 1};
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++mark.line;
            mark.column = 1;
        } else {
            ++mark.column;
        }
    }
    return mark;
}

Result<std::vector<std::pair<std::string, SpecValue>>> parse_assignments(const YAML::Node& node,
                                                                         const Where& where,
                                                                         std::string_view section) {
    if (auto ok = check_open_map(node, where, section); !ok) return ok.error();
    std::vector<std::pair<std::string, SpecValue>> out;
    for (const auto& entry : node) {
        const std::string& name = entry.first.Scalar();
        auto value =
            read_scalar(entry.second, inner(where, entry.first), fmt::format("{}.{}", section, name));
        if (!value) return value.error();
        out.emplace_back(name, std::move(*value));
    }
    return out;
}

Result<std::vector<SpecValue>> parse_value_list(const YAML::Node& node, const Where& where,
                                                const std::string& what) {
    std::vector<SpecValue> values;
    if (!node.IsSequence())
        return error_at(mark_of(node, where), fmt::format("{} must be a list of values, e.g. [a, b]", what));
    std::size_t index = 0;
    for (const auto& item : node) {
        auto value = read_scalar(item, where, fmt::format("{}[{}]", what, index++));
        if (!value) return value.error();
        values.push_back(std::move(*value));
    }
    return values;
}

Result<void> parse_axes(const YAML::Node& node, const Where& where, Spec& spec) {
    if (auto ok = check_open_map(node, where, "axes"); !ok) return ok;
    for (const auto& entry : node) {
        Axis axis;
        axis.name = entry.first.Scalar();
        axis.mark = mark_of(entry.first, where);
        auto values = parse_value_list(entry.second, inner(where, entry.first), "axes." + axis.name);
        if (!values) return values.error();
        if (values->empty())
            return error_at(axis.mark, fmt::format("axis {} has no values; give at least one", axis.name));
        axis.values = std::move(*values);
        spec.axes.push_back(std::move(axis));
    }
    return success();
}

Result<void> parse_zip(const YAML::Node& node, const Where& where, Spec& spec) {
    if (!node.IsSequence())
        return error_at(mark_of(node, where),
                        "zip must be a list of groups, e.g. [[NCCL_MIN_CTAS, NCCL_MAX_CTAS]]");
    std::size_t index = 0;
    for (const auto& group : node) {
        auto names = parse_value_list(group, where, fmt::format("zip[{}]", index++));
        if (!names) return names.error();
        std::vector<std::string> group_names;
        for (auto& name : *names) group_names.push_back(name.text);
        spec.zip.push_back(std::move(group_names));
        spec.zip_marks.push_back(mark_of(group, where));
    }
    return success();
}

Result<void> parse_exclude(const YAML::Node& node, const Where& where, Spec& spec) {
    if (!node.IsSequence())
        return error_at(mark_of(node, where),
                        "exclude must be a list of maps, e.g. [{NCCL_ALGO: tree, NCCL_PROTO: LL}]");
    std::size_t index = 0;
    for (const auto& item : node) {
        std::string section = fmt::format("exclude[{}]", index++);
        if (auto ok = check_open_map(item, where, section); !ok) return ok;
        ExcludeRule rule;
        rule.mark = mark_of(item, where);
        for (const auto& entry : item) {
            std::string what = fmt::format("{}.{}", section, entry.first.Scalar());
            Where at = inner(where, entry.first);
            std::vector<SpecValue> values;
            if (entry.second.IsSequence()) {
                auto list = parse_value_list(entry.second, at, what);
                if (!list) return list.error();
                if (list->empty())
                    return error_at(at.fallback, fmt::format("{} is an empty list; give a value", what));
                values = std::move(*list);
            } else {
                auto value = read_scalar(entry.second, at, what);
                if (!value) return value.error();
                values.push_back(std::move(*value));
            }
            rule.match.emplace_back(entry.first.Scalar(), std::move(values));
        }
        if (rule.match.empty())
            return error_at(rule.mark, fmt::format("{} is empty; it would drop every point", section));
        spec.exclude.push_back(std::move(rule));
    }
    return success();
}

Result<void> parse_include(const YAML::Node& node, const Where& where, Spec& spec) {
    if (!node.IsSequence())
        return error_at(mark_of(node, where),
                        "include must be a list of maps, e.g. [{NCCL_ALGO: ring, tokens: 64}]");
    std::size_t index = 0;
    for (const auto& item : node) {
        std::string section = fmt::format("include[{}]", index++);
        auto values = parse_assignments(item, where, section);
        if (!values) return values.error();
        IncludePoint point{std::move(*values), mark_of(item, where)};
        if (point.values.empty())
            return error_at(point.mark, fmt::format("{} is empty; name at least one value", section));
        spec.include.push_back(std::move(point));
    }
    return success();
}

Result<void> parse_timeouts(const YAML::Node& node, const Where& where, Timeouts& timeouts) {
    if (auto ok = check_map(node, where, "timeouts", {"startup", "capture", "stall", "total"}); !ok)
        return ok;
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        auto seconds = read_seconds(entry.second, inner(where, entry.first), "timeouts." + key);
        if (!seconds) return seconds.error();
        (key == "startup"   ? timeouts.startup
         : key == "capture" ? timeouts.capture
         : key == "stall"   ? timeouts.stall
                            : timeouts.total) = *seconds;
    }
    return success();
}

Result<void> parse_section(const std::string& key, const YAML::Node& value, const Where& at, Spec& spec) {
    if (key == "sweep") {
        auto name = read_scalar(value, at, "sweep");
        if (!name) return name.error();
        if (name->text.empty() || name->text.find_first_of("\n\r\t/") != std::string::npos)
            return error_at(name->mark,
                            "sweep must be a non-empty one-line name without '/', e.g. pcie-study");
        spec.name = name->text;
        return success();
    }
    if (key == "target") {
        auto target = parse_target(value, at);
        if (!target) return target.error();
        spec.target = std::move(*target);
        return success();
    }
    if (key == "workload") {
        auto workload = parse_workload(value, at);
        if (!workload) return workload.error();
        spec.workload = std::move(*workload);
        return success();
    }
    if (key == "env") {
        auto env = parse_assignments(value, at, "env");
        if (!env) return env.error();
        spec.env = std::move(*env);
        return success();
    }
    if (key == "repeats") return parse_repeats(value, at, spec);
    if (key == "baseline") {
        auto baseline = read_scalar(value, at, "baseline");
        if (!baseline) return baseline.error();
        if (baseline->text != "defaults" && baseline->text != "none")
            return error_at(
                baseline->mark,
                fmt::format("baseline: '{}' is neither `defaults` (add NCCL's defaults point, the "
                            "default) nor `none` (no such point)",
                            baseline->text));
        spec.baseline = baseline->text == "none" ? Baseline::none : Baseline::defaults;
        spec.baseline_mark = baseline->mark;
        return success();
    }
    if (key == "search") {
        auto search = parse_search(value, at);
        if (!search) return search.error();
        spec.search = std::move(*search);
        return success();
    }
    if (key == "axes") return parse_axes(value, at, spec);
    if (key == "zip") return parse_zip(value, at, spec);
    if (key == "exclude") return parse_exclude(value, at, spec);
    if (key == "include") return parse_include(value, at, spec);
    return parse_timeouts(value, at, spec.timeouts);
}

}  // namespace

Result<Spec> parse_spec(const std::string& text, const std::string& path) {
    Spec spec;
    spec.path = path;
    spec.text = text;
    spec.name = std::filesystem::path(path).stem().string();
    Where where{&spec.path, SourceMark{path, 1, 1}};
    if (auto bad = invalid_utf8_at(text); bad != std::string::npos)
        return error_at(mark_at_offset(text, bad, path),
                        "the spec is not valid UTF-8 here; save it as UTF-8");
    try {
        YAML::Node root = YAML::Load(text);
        if (!root.IsDefined() || root.IsNull())
            return error_at(SourceMark{path, 0, 0},
                            "the spec is empty; start from experiments/quickstart.yaml");
        if (auto ok = check_map(root, where, "the top level of the spec", k_top_level_keys); !ok)
            return ok.error();
        for (const auto& entry : root) {
            if (auto ok = parse_section(entry.first.Scalar(), entry.second, inner(where, entry.first), spec);
                !ok)
                return ok.error();
        }
        if (!root["workload"].IsDefined())
            return error_at(SourceMark{path, 0, 0},
                            "the spec has no `workload:`; add `workload: {engine: tpverify, "
                            "args: {backend: sim}}` or a `command:`");
    } catch (const YAML::ParserException& e) {
        SourceMark mark{path, e.mark.line + 1, e.mark.column + 1};
        return error_at(mark,
                        fmt::format("YAML syntax error: {}; fix the YAML at this point (quote values that "
                                    "contain ': ', '#', '[' or '{{')",
                                    e.msg));
    } catch (const YAML::Exception& e) {
        return error_at(SourceMark{path, e.mark.line + 1, e.mark.column + 1},
                        fmt::format("cannot read the spec: {}", e.msg));
    }
    return spec;
}

Result<Spec> load_spec(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error::bad_input(
            fmt::format("{}: cannot open the spec file; check the path (see experiments/ for "
                        "examples)",
                        path));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return parse_spec(buffer.str(), path);
}

NameKind classify_name(std::string_view name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return NameKind::invalid;
    bool upper = false, lower = false;
    for (char c : name) {
        if (c >= 'a' && c <= 'z')
            lower = true;
        else if (c >= 'A' && c <= 'Z')
            upper = true;
        else if (!(c >= '0' && c <= '9') && c != '_')
            return NameKind::invalid;
    }
    if (upper == lower) return NameKind::invalid;  // mixed case, or no letter at all
    return upper ? NameKind::env : NameKind::workload;
}

std::string name_problem(std::string_view name) {
    if (classify_name(name) != NameKind::invalid) return {};
    bool upper = false, lower = false, other = name.empty() || (name[0] >= '0' && name[0] <= '9');
    for (char c : name) {
        upper = upper || (c >= 'A' && c <= 'Z');
        lower = lower || (c >= 'a' && c <= 'z');
        other = other ||
                !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
    }
    if (other || (!upper && !lower))
        return fmt::format(
            "'{}' is not a valid name; use letters, digits and '_' (not starting with a digit)", name);
    return fmt::format(
        "'{}' mixes upper and lower case; write environment variables in UPPER_CASE and workload "
        "parameters in lower_case",
        name);
}

}  // namespace ncclsweep::inline spec
