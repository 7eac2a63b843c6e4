// Command-line overrides --axis NAME=v1,v2 and --set NAME=v (docs/spec.md "Command-line overrides").
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/plan/planner.hpp"
#include "core/spec/spec_parser.hpp"

namespace ncclsweep::inline plan {
namespace {

const char* flag_of(OverrideKind kind) {
    return kind == OverrideKind::axis ? "--axis" : "--set";
}

template <typename List>
void erase_name(List& list, const std::string& name) {
    list.erase(
        std::remove_if(list.begin(), list.end(), [&](const auto& entry) { return entry.first == name; }),
        list.end());
}

/// True when the command or client of `workload` has a `{name}` placeholder.
bool has_placeholder(const WorkloadSpec& workload, const std::string& name) {
    const std::string placeholder = "{" + name + "}";
    for (const auto* words : {&workload.command, &workload.client})
        for (const auto& word : *words)
            if (word.text.find(placeholder) != std::string::npos) return true;
    return false;
}

/// `--set repeats=N|auto`: the spec's own key (1..1000 or auto, like `repeats:` in the file).
Result<void> set_repeats(Spec& spec, const Override& item) {
    if (item.kind == OverrideKind::axis)
        return Error::bad_input("--axis repeats: repeats is a spec key, not an axis; use --set repeats=N");
    const std::string& text = item.values.front();
    if (text == "auto") {
        // The spec's own auto settings stay; otherwise diff's defaults (docs/spec.md "Repeats").
        if (!spec.auto_repeats) spec.auto_repeats = AutoRepeatsSpec{};
        spec.auto_repeats->mark = SourceMark{"--set", 0, 0};
        spec.repeats = spec.auto_repeats->fallback;
        return success();
    }
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > 1000)
        return Error::bad_input(
            fmt::format("--set repeats={}: repeats must be a whole number in 1..1000 or auto", text));
    spec.repeats = value;
    spec.auto_repeats.reset();
    return success();
}

}  // namespace

Result<Override> parse_override(OverrideKind kind, std::string_view text) {
    const char* flag = flag_of(kind);
    auto equals = text.find('=');
    if (equals == std::string_view::npos || equals == 0)
        return Error::bad_input(fmt::format("{} {}: write NAME={} (e.g. {} NCCL_PROTO={})", flag, text,
                                            kind == OverrideKind::axis ? "v1,v2" : "value", flag,
                                            kind == OverrideKind::axis ? "LL,Simple" : "Simple"));
    Override out;
    out.kind = kind;
    out.name = std::string(text.substr(0, equals));
    std::string_view rest = text.substr(equals + 1);
    if (auto problem = name_problem(out.name); !problem.empty())
        return Error::bad_input(fmt::format("{} {}: {}", flag, text, problem));
    if (kind == OverrideKind::set) {
        out.values.emplace_back(rest);
        return out;
    }
    std::string current;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        char c = rest[i];
        if (c == '\\' && i + 1 < rest.size() && (rest[i + 1] == ',' || rest[i + 1] == '\\')) {
            current.push_back(rest[++i]);
        } else if (c == ',') {
            out.values.push_back(std::move(current));
            current.clear();
        } else {
            current.push_back(c);
        }
    }
    out.values.push_back(std::move(current));
    return out;
}

Result<void> apply_overrides(Spec& spec, const std::vector<Override>& overrides) {
    for (const auto& item : overrides) {
        SourceMark mark{flag_of(item.kind), 0, 0};
        if (auto problem = name_problem(item.name); !problem.empty())
            return Error::bad_input(fmt::format("{}: {}", mark.file, problem));
        if (item.name == "repeats") {
            if (auto set = set_repeats(spec, item); !set) return set;
            continue;
        }
        std::vector<SpecValue> values;
        for (const auto& text : item.values) values.push_back(SpecValue{text, mark});
        auto axis = std::find_if(spec.axes.begin(), spec.axes.end(),
                                 [&](const Axis& a) { return a.name == item.name; });
        bool env = classify_name(item.name) == NameKind::env;
        // A command only sees a lower_case parameter through a {name} placeholder: any other
        // name would be swept (or fixed) without reaching the workload.
        if (!env && spec.workload.engine.empty() && axis == spec.axes.end() &&
            !has_placeholder(spec.workload, item.name))
            return Error::bad_input(fmt::format(
                "{} {}: the spec has no axis '{}' and its command has no {{{}}} placeholder, so the value "
                "would "
                "reach nothing; use a spec axis or a placeholder of the command (or add {{{}}} to it)",
                mark.file, item.name, item.name, item.name, item.name));
        if (item.kind == OverrideKind::axis || axis != spec.axes.end() ||
            (!env && spec.workload.engine.empty())) {
            if (axis == spec.axes.end()) {
                erase_name(spec.env, item.name);
                erase_name(spec.workload.args, item.name);
                spec.axes.push_back(Axis{item.name, std::move(values), mark});
            } else {
                axis->values = std::move(values);
                axis->mark = mark;
            }
            continue;
        }
        auto& list = env ? spec.env : spec.workload.args;
        auto existing =
            std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == item.name; });
        if (existing != list.end())
            existing->second = values.front();
        else
            list.emplace_back(item.name, values.front());
    }
    return success();
}

}  // namespace ncclsweep::inline plan
