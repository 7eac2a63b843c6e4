#include "core/plan/plan_fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ncclsweep::inline plan {
namespace {

constexpr int k_fingerprint_version = 1;

/// An override as the user would type it; commas and backslashes in --axis values escaped as
/// parse_override expects them.
std::string override_text(const Override& o) {
    if (o.kind == OverrideKind::set)
        return fmt::format("--set {}={}", o.name, o.values.empty() ? "" : o.values.front());
    std::string values;
    for (std::size_t i = 0; i < o.values.size(); ++i) {
        if (i) values += ',';
        for (char c : o.values[i]) {
            if (c == ',' || c == '\\') values += '\\';
            values += c;
        }
    }
    return fmt::format("--axis {}={}", o.name, values);
}

std::string_view delivery_text(EnvDelivery delivery) {
    switch (delivery) {
        case EnvDelivery::sitecustomize:
            return "sitecustomize";
        case EnvDelivery::env:
            return "env";
        case EnvDelivery::both:
            return "both";
    }
    return "?";
}

std::string joined(const std::vector<SpecValue>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w.text;
    return out;
}

std::string assignments_text(const std::vector<Assignment>& list) {
    std::vector<Assignment> sorted = list;
    std::sort(sorted.begin(), sorted.end());
    std::string out;
    for (const auto& [name, value] : sorted) out += (out.empty() ? "" : " ") + name + "=" + value;
    return out;
}

std::string argv_text(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
    return out;
}

}  // namespace

std::string PlanFingerprint::to_json() const {
    nlohmann::ordered_json j;
    j["fingerprint_version"] = k_fingerprint_version;
    j["command_line"] = command_line;
    nlohmann::ordered_json settings = nlohmann::ordered_json::array();
    for (const auto& [what, value] : parts) settings.push_back({what, value});
    j["settings"] = std::move(settings);
    return j.dump();
}

Result<PlanFingerprint> PlanFingerprint::from_json(const std::string& text) {
    PlanFingerprint out;
    if (text.empty()) return out;
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("settings") || !j["settings"].is_array())
        return Error::bad_input(
            "the stored plan fingerprint is not valid JSON of this ncclsweep; run the sweep anew");
    out.command_line = j.value("command_line", "");
    for (const auto& pair : j["settings"]) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
            return Error::bad_input(
                "the stored plan fingerprint has a malformed setting; run the sweep anew");
        out.parts.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
    return out;
}

PlanFingerprint fingerprint_of(const Spec& spec, const std::vector<Override>& overrides,
                               const PlanOptions& options) {
    PlanFingerprint f;
    std::string flags;
    for (const auto& o : overrides) flags += (flags.empty() ? "" : " ") + override_text(o);
    f.parts.emplace_back("--axis/--set", flags);
    f.parts.emplace_back("target", spec.target.url);
    f.parts.emplace_back("env delivery", std::string(delivery_text(spec.target.env_delivery)));
    f.parts.emplace_back("engine", spec.workload.engine.empty() ? "" : options.engine_path);
    f.parts.emplace_back("repeats", std::to_string(spec.repeats));
    // Empty for the default, so sweeps recorded before `baseline:` existed compare equal on it.
    f.parts.emplace_back("baseline", spec.baseline == Baseline::none ? "none" : "");
    f.parts.emplace_back(
        "timeouts", fmt::format("startup {} s, capture {} s, stall {} s, total {} s", spec.timeouts.startup,
                                spec.timeouts.capture, spec.timeouts.stall, spec.timeouts.total));
    f.parts.emplace_back("client", joined(spec.workload.client));
    f.parts.emplace_back("ready", spec.workload.ready);
    std::string metrics;
    for (const auto& [name, regex] : spec.workload.metrics)
        metrics += (metrics.empty() ? "" : " ") + name + "=" + regex;
    f.parts.emplace_back("metrics", metrics);
    // The search's rules decide what runs, so a resume keeps them; the budget may change.
    if (std::string search = spec.search.describe(spec.repeats, false); !search.empty())
        f.parts.emplace_back("search", search);
    return f;
}

std::vector<std::string> fingerprint_differences(const PlanFingerprint& stored, const PlanFingerprint& now) {
    std::vector<std::string> out;
    if (stored.parts.empty()) return out;
    auto show = [](const std::string& v) { return v.empty() ? std::string("(none)") : "'" + v + "'"; };
    auto find = [](const PlanFingerprint& f, const std::string& what) -> std::string {
        for (const auto& [name, value] : f.parts)
            if (name == what) return value;
        return {};
    };
    for (const auto& [what, value] : stored.parts) {
        std::string current = find(now, what);
        if (current != value)
            out.push_back(fmt::format("{}: was {}, now {}", what, show(value), show(current)));
    }
    for (const auto& part : now.parts) {  // not a binding: the lambda captures `what` (clang 14)
        const std::string& what = part.first;
        const std::string& value = part.second;
        bool known = std::any_of(stored.parts.begin(), stored.parts.end(),
                                 [&](const auto& p) { return p.first == what; });
        if (!known && !value.empty()) out.push_back(fmt::format("{}: was (none), now {}", what, show(value)));
    }
    return out;
}

std::vector<std::string> plan_differences(const std::vector<Experiment>& stored,
                                          const std::vector<Experiment>& planned, std::size_t limit) {
    std::vector<std::string> out;
    if (stored.size() != planned.size())
        out.push_back(fmt::format("the sweep has {} experiments, the spec now plans {}", stored.size(),
                                  planned.size()));
    std::size_t more = 0;
    const std::size_t n = std::min(stored.size(), planned.size());
    for (std::size_t i = 0; i < n; ++i) {
        const Experiment& was = stored[i];
        const Experiment& is = planned[i];
        std::string difference;
        if (was.id != is.id || was.key != is.key)
            difference = fmt::format("experiment {} was {}, now {}", was.id, was.canonical, is.canonical);
        else if (was.argv != is.argv || was.shell != is.shell)
            difference = fmt::format("experiment {}'s command was '{}', now '{}'", was.id,
                                     argv_text(was.argv), argv_text(is.argv));
        else if (assignments_text(was.env) != assignments_text(is.env))
            difference = fmt::format("experiment {}'s environment was '{}', now '{}'", was.id,
                                     assignments_text(was.env), assignments_text(is.env));
        else if (assignments_text(was.workload) != assignments_text(is.workload))
            difference = fmt::format("experiment {}'s workload parameters were '{}', now '{}'", was.id,
                                     assignments_text(was.workload), assignments_text(is.workload));
        if (difference.empty()) continue;
        if (out.size() < limit)
            out.push_back(std::move(difference));
        else
            ++more;
    }
    if (more) out.push_back(fmt::format("and {} more experiments differ", more));
    return out;
}

}  // namespace ncclsweep::inline plan
