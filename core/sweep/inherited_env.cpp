#include "core/sweep/inherited_env.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace ncclsweep::inline sweep {
namespace {

bool inherited_name_valid(const std::string& name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

std::map<std::string, std::string> parse_env_output(const std::string& output) {
    std::map<std::string, std::string> env;
    std::size_t begin = 0;
    while (begin < output.size()) {
        std::size_t end = output.find('\n', begin);
        if (end == std::string::npos) end = output.size();
        const std::string line = output.substr(begin, end - begin);
        begin = end + 1;
        const auto eq = line.find('=');
        // A value with a newline continues on lines that need not look like NAME=value; those
        // that do are taken as they read (`env` cannot tell them apart either).
        if (eq == std::string::npos || !inherited_name_valid(line.substr(0, eq))) continue;
        env.emplace(line.substr(0, eq), line.substr(eq + 1));
    }
    return env;
}

std::string inherited_value_of(const std::vector<Assignment>& list, const std::string& name) {
    auto it = std::find_if(list.begin(), list.end(), [&](const Assignment& a) { return a.first == name; });
    return it == list.end() ? "(not set)" : it->second;
}

}  // namespace

bool is_inherited_setting(const std::string& name) {
    static constexpr std::array<std::string_view, 3> k_prefixes = {"NCCL_", "CUDA_", "TORCH_NCCL_"};
    return std::any_of(k_prefixes.begin(), k_prefixes.end(),
                       [&](std::string_view prefix) { return name.rfind(prefix, 0) == 0; });
}

std::vector<Assignment> inherited_settings(const std::string& env_output,
                                           const std::vector<Experiment>& experiments,
                                           const std::vector<Assignment>& runner_env) {
    std::vector<Assignment> out;
    for (const auto& setting : parse_env_output(env_output)) {  // a map: pair<const string, string>
        // Named, not a structured binding: lambdas below capture it (clang before 16 cannot
        // capture a binding, and the fuzz build uses Debian 12's clang 14).
        const std::string& name = setting.first;
        const std::string& value = setting.second;
        if (!is_inherited_setting(name)) continue;
        const bool runner_sets = std::any_of(runner_env.begin(), runner_env.end(),
                                             [&](const Assignment& a) { return a.first == name; });
        const bool every_experiment_sets =
            !experiments.empty() &&
            std::all_of(experiments.begin(), experiments.end(), [&](const Experiment& e) {
                return std::any_of(e.env.begin(), e.env.end(),
                                   [&](const Assignment& a) { return a.first == name; });
            });
        if (!runner_sets && !every_experiment_sets) out.emplace_back(name, value);
    }
    return out;
}

Result<std::vector<Assignment>> inherited_environment(Target& target,
                                                      const std::vector<Experiment>& experiments,
                                                      const std::vector<Assignment>& runner_env) {
    const int hosts = target.schedules_batches() ? 1 : std::max(1, target.slots());
    std::vector<std::vector<Assignment>> seen;
    for (int slot = 0; slot < hosts; ++slot) {
        Target& host = hosts == 1 ? target : target.slot_target(slot);
        auto output = host.capture({"env"}, std::chrono::seconds(60));
        if (!output) return output.error();
        seen.push_back(inherited_settings(*output, experiments, runner_env));
    }
    if (hosts == 1) return seen.front();
    std::set<std::string> names;
    for (const auto& list : seen)
        for (const auto& [name, value] : list) names.insert(name);
    std::vector<Assignment> merged;
    for (const auto& name : names) {
        std::set<std::string> values;
        for (const auto& list : seen) values.insert(inherited_value_of(list, name));
        if (values.size() == 1) {
            merged.emplace_back(name, *values.begin());
            continue;
        }
        std::string joined;
        for (int slot = 0; slot < hosts; ++slot)
            joined += fmt::format("{}{} on {}", joined.empty() ? "" : "; ",
                                  inherited_value_of(seen[static_cast<std::size_t>(slot)], name),
                                  target.slot_target(slot).describe());
        merged.emplace_back(name, joined);
    }
    return merged;
}

std::string inherited_warning(const std::vector<Assignment>& inherited, const std::string& target) {
    if (inherited.empty()) return {};
    std::string list;
    for (const auto& [name, value] : inherited)
        list += fmt::format("{}{}={}", list.empty() ? "" : " ", name, value);
    return fmt::format(
        "the workload inherits {} the spec does not set, from the environment commands start with on {}: {}. "
        "Every experiment that does not set them runs with them; they are recorded with the sweep (`results "
        "show` lists them). Unset them before `run`, or put them in the spec's env: to make them part of the "
        "study",
        inherited.size() == 1 ? "a variable" : fmt::format("{} variables", inherited.size()), target, list);
}

std::string defaults_point_conflict(const std::vector<Assignment>& inherited,
                                    const std::vector<Experiment>& experiments, const std::string& target) {
    const Experiment* defaults = nullptr;
    std::set<std::string> swept;
    for (const auto& experiment : experiments) {
        if (experiment.defaults && !defaults) defaults = &experiment;
        if (!experiment.defaults)
            for (const auto& [name, value] : experiment.env) swept.insert(name);
    }
    if (!defaults) return {};
    std::string list, names;
    for (const Assignment& setting : inherited) {
        const std::string& name = setting.first;  // captured below: see inherited_settings
        const std::string& value = setting.second;
        const bool set_by_defaults = std::any_of(defaults->env.begin(), defaults->env.end(),
                                                 [&](const Assignment& a) { return a.first == name; });
        if (!swept.count(name) || set_by_defaults) continue;
        list += fmt::format("{}{}={}", list.empty() ? "" : " ", name, value);
        names += fmt::format("{}-u {}", names.empty() ? "" : " ", name);
    }
    if (list.empty()) return {};
    return fmt::format(
        "{} is exported in the environment commands start with on {}, and the sweep varies it: its NCCL's "
        "defaults point (experiment {}) would run with that value and be stored as NCCL's defaults. Unset it "
        "before `run` (e.g. `env {} ncclsweep run ...`), or write `baseline: none` in the spec to run "
        "without "
        "a defaults point",
        list, target, defaults->id, names);
}

std::vector<std::string> inherited_differences(const std::vector<Assignment>& before,
                                               const std::vector<Assignment>& now) {
    std::set<std::string> names;
    for (const auto& list : {before, now})
        for (const auto& [name, value] : list) names.insert(name);
    std::vector<std::string> out;
    for (const auto& name : names) {
        const std::string a = inherited_value_of(before, name), b = inherited_value_of(now, name);
        if (a != b) out.push_back(fmt::format("inherited {}: {} -> {}", name, a, b));
    }
    return out;
}

}  // namespace ncclsweep::inline sweep
