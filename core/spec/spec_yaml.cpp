#include "core/spec/spec_yaml.hpp"
#include "core/text.hpp"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace ncclsweep::inline spec::yaml {
namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

const char* kind_name(const YAML::Node& node) {
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a map";
    if (node.IsNull()) return "empty";
    return "a single value";
}

}  // namespace

Where inner(const Where& where, const YAML::Node& key_node) {
    return Where{where.file, mark_of(key_node, where)};
}

SourceMark mark_of(const YAML::Node& node, const Where& where) {
    if (!node.IsDefined()) return where.fallback;
    YAML::Mark mark = node.Mark();
    if (mark.is_null() || mark.line < 0) return where.fallback;
    return SourceMark{*where.file, mark.line + 1, mark.column + 1};
}

Error error_at(const SourceMark& mark, std::string_view what) {
    return Error::bad_input(fmt::format("{}: {}", mark.to_string(), what));
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    auto best = closest_match(word, candidates);
    return best ? fmt::format("; did you mean '{}'?", *best) : std::string();
}

Result<void> check_open_map(const YAML::Node& node, const Where& where, std::string_view section) {
    if (!node.IsMap())
        return error_at(
            mark_of(node, where),
            fmt::format("{} must be a map of `name: value` entries, but it is {}", section, kind_name(node)));
    std::set<std::string> seen;
    for (const auto& entry : node) {
        if (!entry.first.IsScalar())
            return error_at(
                mark_of(entry.first, where),
                fmt::format("a key in {} must be a plain name, not {}", section, kind_name(entry.first)));
        if (!seen.insert(entry.first.Scalar()).second)
            return error_at(
                mark_of(entry.first, where),
                fmt::format("'{}' appears twice in {}; keep one of them", entry.first.Scalar(), section));
    }
    return success();
}

Result<void> check_map(const YAML::Node& node, const Where& where, std::string_view section,
                       const std::vector<std::string>& allowed) {
    if (auto ok = check_open_map(node, where, section); !ok) return ok;
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
        std::string hint = did_you_mean(key, allowed);
        if (hint.empty()) hint = fmt::format("; the keys allowed here are: {}", fmt::join(allowed, ", "));
        return error_at(mark_of(entry.first, where),
                        fmt::format("unknown key '{}' in {}{}", key, section, hint));
    }
    return success();
}

Result<SpecValue> read_scalar(const YAML::Node& node, const Where& where, std::string_view what) {
    // A missing value has no useful mark of its own (yaml-cpp puts it after the key's line): use the key's.
    SourceMark mark = !node.IsDefined() || node.IsNull() ? where.fallback : mark_of(node, where);
    if (!node.IsDefined() || node.IsNull())
        return error_at(mark, fmt::format("{} has no value; write one (use \"\" for an empty string)", what));
    if (!node.IsScalar())
        return error_at(mark, fmt::format("{} must be a single value, but it is {}", what, kind_name(node)));
    if (node.Scalar().find('\0') != std::string::npos)
        return error_at(mark,
                        fmt::format("{} contains a NUL character, which no environment variable or argument "
                                    "can carry; remove it",
                                    what));
    return SpecValue{node.Scalar(), mark};
}

Result<bool> read_bool(const YAML::Node& node, const Where& where, std::string_view what) {
    auto value = read_scalar(node, where, what);
    if (!value) return value.error();
    std::string text = lower(value->text);
    if (text == "true" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "no" || text == "off") return false;
    return error_at(value->mark, fmt::format("{} must be true or false, not '{}'", what, value->text));
}

Result<long long> read_int(const YAML::Node& node, const Where& where, std::string_view what, long long low,
                           long long high) {
    auto value = read_scalar(node, where, what);
    if (!value) return value.error();
    long long number = 0;
    const std::string& text = value->text;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc() || end != text.data() + text.size() || number < low || number > high)
        return error_at(value->mark, fmt::format("{} must be a whole number from {} to {}, not '{}'", what,
                                                 low, high, text));
    return number;
}

Result<double> read_seconds(const YAML::Node& node, const Where& where, std::string_view what) {
    auto value = read_scalar(node, where, what);
    if (!value) return value.error();
    std::string text = value->text;
    double unit = 1;
    if (!text.empty()) {
        char suffix = text.back();
        if (suffix == 's' || suffix == 'm' || suffix == 'h') {
            unit = suffix == 's' ? 1 : suffix == 'm' ? 60 : 3600;
            text.pop_back();
        }
    }
    double number = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !(number >= 0))
        return error_at(value->mark,
                        fmt::format("{} must be a duration in seconds such as 90, 90s, 20m or 1h "
                                    "(0 = no limit), not '{}'",
                                    what, value->text));
    return number * unit;
}

Result<std::vector<SpecValue>> read_command(const YAML::Node& node, const Where& where, std::string_view what,
                                            bool& is_shell) {
    std::vector<SpecValue> out;
    if (node.IsSequence()) {
        is_shell = false;
        std::size_t index = 0;
        for (const auto& item : node) {
            auto value = read_scalar(item, where, fmt::format("{}[{}]", what, index++));
            if (!value) return value.error();
            out.push_back(std::move(*value));
        }
        if (out.empty())
            return error_at(mark_of(node, where),
                            fmt::format("{} is an empty list; give the program and its "
                                        "arguments, e.g. [python3, -m, sglang.launch_server]",
                                        what));
        return out;
    }
    auto value = read_scalar(node, where, what);
    if (!value) return value.error();
    if (value->text.find_first_not_of(" \t\n") == std::string::npos)
        return error_at(value->mark, fmt::format("{} is empty; give the command to run", what));
    is_shell = true;
    out.push_back(std::move(*value));
    return out;
}

Result<void> check_regex(const std::string& pattern, const SourceMark& mark, std::string_view what,
                         int groups) {
    RE2 regex(pattern, RE2::Quiet);
    if (!regex.ok())
        return error_at(
            mark, fmt::format("{} is not a valid regular expression (RE2 syntax): {}", what, regex.error()));
    if (groups >= 0 && regex.NumberOfCapturingGroups() != groups)
        return error_at(mark, fmt::format("{} must have exactly {} capturing group(s) (it has {}); wrap the "
                                          "number in ( ) and use (?: ) for other groups",
                                          what, groups, regex.NumberOfCapturingGroups()));
    return success();
}

}  // namespace ncclsweep::inline spec::yaml
