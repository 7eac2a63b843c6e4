// Asking the engine which points of a plan it cannot run (core/spec/engine_validate.hpp).
#include "core/spec/engine_validate.hpp"
#include "core/spec/engine_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace ncclsweep::inline spec {
namespace {

constexpr std::size_t k_batch = 64;

/// Where the spec (or a --set/--axis flag) gave parameter `flag` the value `value`; nullptr when
/// it did not set it (the engine's default).
const SourceMark* place_of(const Spec& spec, const std::string& flag, const std::string& value) {
    for (const Axis& axis : spec.axes)
        if (!axis.is_env() && flag_name(axis.name) == flag)
            for (const SpecValue& v : axis.values)
                if (v.text == value) return &v.mark;
    for (const auto& [name, v] : spec.workload.args)
        if (flag_name(name) == flag && v.text == value) return &v.mark;
    for (const IncludePoint& point : spec.include)
        for (const auto& [name, v] : point.values)
            if (flag_name(name) == flag && v.text == value) return &v.mark;
    return nullptr;
}

std::string value_of(const EngineRun& run, const std::string& flag) {
    for (const auto& [name, value] : run.workload)
        if (flag_name(name) == flag) return value;
    return {};
}

std::string point_text(const EngineRun& run) {
    std::string out;
    for (const auto& [name, value] : run.workload) out += (out.empty() ? "" : ", ") + name + "=" + value;
    return out.empty() ? "the engine's defaults" : out;
}

}  // namespace

void EngineRunSet::add(const Experiment& experiment) {
    if (experiment.argv.empty() || experiment.shell) return;
    // Most points of a big plan repeat a command line (env axes do not change it): look it up
    // as one reused string, and copy the args only for a new one.
    m_key.clear();
    for (auto arg = experiment.argv.begin() + 1; arg != experiment.argv.end(); ++arg)
        m_key.append(*arg).push_back('\0');
    if (m_seen.count(m_key)) return;
    m_seen.insert(m_key);
    m_runs.push_back(
        {experiment.id, experiment.workload, {experiment.argv.begin() + 1, experiment.argv.end()}});
}

std::vector<EngineRun> distinct_engine_runs(const std::vector<Experiment>& experiments) {
    EngineRunSet set;
    for (const Experiment& e : experiments) set.add(e);
    return set.runs();
}

Result<void> judge_engine_runs(const Spec& spec, const std::vector<EngineRun>& runs,
                               std::string_view verdicts, std::string_view engine) {
    std::vector<nlohmann::json> lines;
    std::size_t pos = 0;
    while (pos < verdicts.size()) {
        const auto nl = verdicts.find('\n', pos);
        const std::string_view line = verdicts.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
        pos = nl == std::string_view::npos ? verdicts.size() : nl + 1;
        if (line.empty()) continue;
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("valid") || !j["valid"].is_boolean())
            return Error::infrastructure(fmt::format(
                "{} --validate printed '{}', not a verdict; use a tpverify of this ncclsweep build "
                "(--engine)",
                engine, line));
        lines.push_back(std::move(j));
    }
    if (lines.size() != runs.size())
        return Error::infrastructure(fmt::format("{} --validate gave {} verdicts for {} command lines",
                                                 engine, lines.size(), runs.size()));
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const nlohmann::json& v = lines[i];
        if (v["valid"].get<bool>()) continue;
        const EngineRun& run = runs[i];
        const std::string reason = v.value("error", std::string("no reason given"));
        std::vector<std::string> names;
        if (v.contains("parameters") && v["parameters"].is_array())
            for (const auto& n : v["parameters"])
                if (n.is_string()) names.push_back(n.get<std::string>());
        for (const std::string& name : names) {
            const std::string value = value_of(run, name);
            if (const SourceMark* mark = place_of(spec, name, value))
                return Error::bad_input(fmt::format(
                    "{}: {}: {}: tpverify cannot run experiment {} ({}): {}; change the value in the spec or "
                    "the flag, or leave this point out (exclude:)",
                    mark->to_string(), name, value, run.experiment_id, point_text(run), reason));
        }
        return Error::bad_input(
            fmt::format("{}: tpverify cannot run experiment {} ({}): {}; change the "
                        "workload's args or axes",
                        spec.path.empty() ? std::string("the spec") : spec.path, run.experiment_id,
                        point_text(run), reason));
    }
    return success();
}

Result<void> validate_engine_runs(const Spec& spec, const std::vector<EngineRun>& runs, Target& target,
                                  const std::string& engine_path) {
    for (std::size_t start = 0; start < runs.size(); start += k_batch) {
        const std::size_t end = std::min(runs.size(), start + k_batch);
        std::vector<std::string> argv = {engine_path, "--validate"};
        for (std::size_t i = start; i < end; ++i) {
            if (i > start) argv.emplace_back("--");
            argv.insert(argv.end(), runs[i].args.begin(), runs[i].args.end());
        }
        auto out = target.capture(argv, std::chrono::seconds(30));
        if (!out)
            return Error::infrastructure(fmt::format("cannot ask {} on {} which points it can run: {}",
                                                     engine_path, target.describe(), out.error().message));
        const std::vector<EngineRun> batch(runs.begin() + static_cast<std::ptrdiff_t>(start),
                                           runs.begin() + static_cast<std::ptrdiff_t>(end));
        if (auto judged = judge_engine_runs(spec, batch, *out, engine_path); !judged) return judged;
    }
    return success();
}

}  // namespace ncclsweep::inline spec
