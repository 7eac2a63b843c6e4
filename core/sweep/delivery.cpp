#include "core/sweep/delivery.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ncclsweep::inline sweep {
namespace {

/// One parsed marker line: its kind, its key=value words, and the free text after them.
struct MarkerLine {
    std::string kind;
    std::map<std::string, std::string> fields;
    std::string rest;
};

std::optional<MarkerLine> parse_marker_line(const std::string& line) {
    static constexpr std::string_view k_prefix = "ncclsweep-";
    if (line.rfind(k_prefix, 0) != 0) return std::nullopt;
    MarkerLine parsed;
    std::size_t at = line.find(' ');
    if (at == std::string::npos) return std::nullopt;
    parsed.kind = line.substr(k_prefix.size(), at - k_prefix.size());
    // pgid, pid, task, repeat and the kind's own field are key=value words; the rest is free text.
    for (int word = 0; word < 5 && at < line.size(); ++word) {
        const std::size_t begin = at + 1;
        std::size_t end = line.find(' ', begin);
        if (end == std::string::npos) end = line.size();
        const std::string token = line.substr(begin, end - begin);
        const auto eq = token.find('=');
        if (eq == std::string::npos) return std::nullopt;
        parsed.fields[token.substr(0, eq)] = token.substr(eq + 1);
        at = end;
    }
    parsed.rest = at < line.size() ? line.substr(at + 1) : std::string();
    return parsed;
}

bool marker_of_run(const MarkerLine& line, const DeliveryRun& run) {
    auto field = [&](const char* name) {
        auto it = line.fields.find(name);
        return it == line.fields.end() ? std::string() : it->second;
    };
    if (field("repeat") != std::to_string(run.repeat)) return false;
    if (!run.scheduler_task.empty()) return field("task") == run.scheduler_task;
    if (run.process_group) return field("pgid") == std::to_string(*run.process_group);
    return true;
}

std::vector<std::string> split_marker_names(const std::string& text) {
    std::vector<std::string> names;
    if (text == "-" || text.empty()) return names;
    std::size_t begin = 0;
    for (;;) {
        const std::size_t comma = text.find(',', begin);
        names.push_back(text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
        if (comma == std::string::npos) break;
        begin = comma + 1;
    }
    return names;
}

}  // namespace

DeliveryEvidence read_delivery_evidence(const std::string& text, const DeliveryRun& run) {
    DeliveryEvidence evidence;
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find('\n', begin);
        if (end == std::string::npos) break;  // a line still being written is not evidence yet
        auto line = parse_marker_line(text.substr(begin, end - begin));
        begin = end + 1;
        if (!line || !marker_of_run(*line, run)) continue;
        if (line->kind == "delivered") {
            ++evidence.interpreters;
            auto missing = line->fields.find("missing");
            for (auto& name : split_marker_names(missing == line->fields.end() ? "?" : missing->second))
                if (std::find(evidence.missing.begin(), evidence.missing.end(), name) ==
                    evidence.missing.end())
                    evidence.missing.push_back(std::move(name));
        } else if (line->kind == "chained" && evidence.chained_errors.size() < 5) {
            evidence.chained_errors.push_back(line->rest);
        }
    }
    return evidence;
}

std::string delivery_failure_cause(const DeliveryEvidence& evidence, const std::string& dir) {
    const std::string file = dir + "/sitecustomize.py";
    if (evidence.interpreters > 0) {
        std::string names;
        for (const auto& name : evidence.missing) names += (names.empty() ? "" : ", ") + name;
        return fmt::format(
            "settings not delivered: sitecustomize.py could not set {}; set target.env_delivery: env or "
            "both\n"
            "It ran in {} Python interpreter{} of this run ({}), and the variables named above did not read "
            "back "
            "as the sweep set them. With env or both they are set in the process environment as well. This "
            "run's numbers were measured without them and are not kept.",
            names, evidence.interpreters, evidence.interpreters == 1 ? "" : "s", file);
    }
    return fmt::format(
        "settings not delivered: no Python interpreter imported sitecustomize.py (not a Python program? "
        "python -I or -S? PYTHONPATH reset?); set target.env_delivery: env or both\n"
        "With env_delivery: sitecustomize the settings travel only in {}, which Python imports from "
        "PYTHONPATH. No interpreter of this run recorded that it did: the workload is not a Python program "
        "(tpverify, a shell script, a C++ server), Python was started with -I or -S (which ignore PYTHONPATH "
        "or skip site), a launcher reset PYTHONPATH or the environment, or the experiment's directory is not "
        "writable from where the workload ran. With env or both the variables are set in the process "
        "environment as well. This run's numbers were measured without the settings and are not kept.",
        file);
}

}  // namespace ncclsweep::inline sweep
