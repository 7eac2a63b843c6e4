// Command-line overrides --axis NAME=v1,v2 and --set NAME=v (docs/spec.md "Command-line overrides").
#include <fmt/format.h>

#include <algorithm>

#include "core/planner.hpp"
#include "core/spec_parser.hpp"

namespace ncclsweep {
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
        std::vector<SpecValue> values;
        for (const auto& text : item.values) values.push_back(SpecValue{text, mark});
        auto axis = std::find_if(spec.axes.begin(), spec.axes.end(),
                                 [&](const Axis& a) { return a.name == item.name; });
        bool env = classify_name(item.name) == NameKind::env;
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

}  // namespace ncclsweep
