// Parsers of the `target:` and `workload:` sections of a spec.
#include <fmt/format.h>

#include <charconv>

#include "core/spec/metric.hpp"
#include "core/spec/spec_sections.hpp"

namespace ncclsweep::inline spec::yaml {
namespace {

Where inner(const Where& where, const YAML::Node& key_node) {
    return Where{where.file, mark_of(key_node, where)};
}

Result<void> check_url(const SpecValue& url) {
    if (url.text == "local") return success();
    const std::string_view prefix = "ssh://";
    std::string_view rest = url.text;
    auto bad = [&](std::string_view why) {
        return error_at(url.mark, fmt::format("target '{}' {}; write `local` or `ssh://user@host[:port]`",
                                              url.text, why));
    };
    if (rest.substr(0, prefix.size()) != prefix) return bad("is neither local nor an ssh:// URL");
    rest.remove_prefix(prefix.size());
    if (auto at = rest.find('@'); at != std::string_view::npos) {
        if (at == 0) return bad("has an empty user name");
        rest.remove_prefix(at + 1);
    }
    std::string_view host = rest;
    if (auto colon = rest.rfind(':');
        colon != std::string_view::npos && rest.find(']') == std::string_view::npos) {
        host = rest.substr(0, colon);
        std::string_view port = rest.substr(colon + 1);
        int number = 0;
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
        if (port.empty() || ec != std::errc() || end != port.data() + port.size() || number < 1 ||
            number > 65535)
            return bad("has a port that is not a number from 1 to 65535");
    }
    if (host.empty()) return bad("has no host name");
    if (host.find_first_of("/ \t\n?#") != std::string_view::npos)
        return bad("has a host name with '/', spaces or '?'");
    return success();
}

Result<RuleSpec> parse_rule(const YAML::Node& node, const Where& where, std::size_t index) {
    std::string section = fmt::format("workload.rules[{}]", index);
    if (auto ok = check_map(node, where, section, {"name", "regex", "class", "fatal"}); !ok)
        return ok.error();
    RuleSpec rule;
    rule.mark = mark_of(node, where);
    bool has_regex = false;
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        Where at = inner(where, entry.first);
        std::string what = fmt::format("{}.{}", section, key);
        if (key == "fatal") {
            auto value = read_bool(entry.second, at, what);
            if (!value) return value.error();
            rule.fatal = *value;
            continue;
        }
        auto value = read_scalar(entry.second, at, what);
        if (!value) return value.error();
        if (key == "name") rule.name = value->text;
        if (key == "class") rule.failure_class = value->text;
        if (key == "regex") {
            if (auto ok = check_regex(value->text, value->mark, what, -1); !ok) return ok.error();
            rule.regex = value->text;
            has_regex = true;
        }
    }
    if (!has_regex || rule.name.empty())
        return error_at(rule.mark,
                        fmt::format("{} needs a `name:` and a `regex:` (and optionally `class:` and "
                                    "`fatal: false` for a warning-only rule)",
                                    section));
    if (rule.failure_class.empty()) rule.failure_class = "user";
    return rule;
}

Result<void> parse_args(const YAML::Node& node, const Where& where, WorkloadSpec& workload) {
    if (auto ok = check_open_map(node, where, "workload.args"); !ok) return ok;
    for (const auto& entry : node) {
        const std::string& name = entry.first.Scalar();
        SourceMark name_mark = mark_of(entry.first, where);
        bool valid = !name.empty() && name[0] >= 'a' && name[0] <= 'z';
        for (char c : name)
            valid = valid && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
        if (!valid)
            return error_at(name_mark,
                            fmt::format("workload.args key '{}' is not a tpverify option name; write it "
                                        "in lower case without dashes in front, e.g. `tokens: 4`",
                                        name));
        auto value =
            read_scalar(entry.second, inner(where, entry.first), fmt::format("workload.args.{}", name));
        if (!value) return value.error();
        workload.args.emplace_back(name, std::move(*value));
    }
    return success();
}

}  // namespace

Result<TargetSpec> parse_target(const YAML::Node& node, const Where& where) {
    TargetSpec target;
    target.mark = mark_of(node, where);
    if (!node.IsMap()) {
        auto url = read_scalar(node, where, "target");
        if (!url) return url.error();
        if (auto ok = check_url(*url); !ok) return ok.error();
        target.url = url->text;
        return target;
    }
    if (auto ok = check_map(node, where, "target",
                            {"url", "env_delivery", "workdir", "identity_file", "accept_new_host_key"});
        !ok)
        return ok.error();
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        Where at = inner(where, entry.first);
        std::string what = "target." + key;
        if (key == "accept_new_host_key") {
            auto value = read_bool(entry.second, at, what);
            if (!value) return value.error();
            target.accept_new_host_key = *value;
            continue;
        }
        auto value = read_scalar(entry.second, at, what);
        if (!value) return value.error();
        if (key == "url") {
            if (auto ok = check_url(*value); !ok) return ok.error();
            target.url = value->text;
        } else if (key == "env_delivery") {
            if (value->text == "sitecustomize")
                target.env_delivery = EnvDelivery::sitecustomize;
            else if (value->text == "env")
                target.env_delivery = EnvDelivery::env;
            else if (value->text == "both")
                target.env_delivery = EnvDelivery::both;
            else
                return error_at(value->mark,
                                fmt::format("target.env_delivery '{}' is not known; use sitecustomize, "
                                            "env or both",
                                            value->text));
        } else if (key == "workdir") {
            target.workdir = value->text;
        } else if (key == "identity_file") {
            target.identity_file = value->text;
        }
    }
    return target;
}

Result<WorkloadSpec> parse_workload(const YAML::Node& node, const Where& where) {
    WorkloadSpec workload;
    workload.mark = mark_of(node, where);
    if (auto ok = check_map(node, where, "workload",
                            {"engine", "args", "command", "client", "ready", "metrics", "rules"});
        !ok)
        return ok.error();
    bool has_engine = node["engine"].IsDefined(), has_command = node["command"].IsDefined();
    if (has_engine == has_command)
        return error_at(workload.mark, has_engine
                                           ? "workload has both `engine:` and `command:`; keep one of them"
                                           : "workload needs `engine: tpverify` (with `args:`) or `command:` "
                                             "(the program to run, as a string or a list)");
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        Where at = inner(where, entry.first);
        std::string what = "workload." + key;
        if (has_engine && (key == "client" || key == "ready" || key == "metrics"))
            return error_at(at.fallback,
                            fmt::format("{} only applies to `command:` workloads; tpverify reports "
                                        "readiness and results itself, so remove it",
                                        what));
        if (has_command && key == "args")
            return error_at(at.fallback,
                            "workload.args only applies to `engine: tpverify`; for `command:` put "
                            "{name} placeholders in the command and sweep `name` as an axis");
        if (key == "engine") {
            auto value = read_scalar(entry.second, at, what);
            if (!value) return value.error();
            if (value->text != "tpverify")
                return error_at(value->mark,
                                fmt::format("workload.engine '{}' is not known; the only engine is "
                                            "tpverify (use `command:` for anything else)",
                                            value->text));
            workload.engine = value->text;
        } else if (key == "args") {
            if (auto ok = parse_args(entry.second, at, workload); !ok) return ok.error();
        } else if (key == "command" || key == "client") {
            bool shell = false;
            auto value = read_command(entry.second, at, what, shell);
            if (!value) return value.error();
            (key == "command" ? workload.command : workload.client) = std::move(*value);
            (key == "command" ? workload.command_is_shell : workload.client_is_shell) = shell;
        } else if (key == "ready") {
            auto value = read_scalar(entry.second, at, what);
            if (!value) return value.error();
            if (auto ok = check_regex(value->text, value->mark, what, -1); !ok) return ok.error();
            workload.ready = value->text;
        } else if (key == "metrics") {
            if (auto ok = check_open_map(entry.second, at, what); !ok) return ok.error();
            for (const auto& metric : entry.second) {
                const std::string name = metric.first.Scalar();
                std::string metric_what = fmt::format("workload.metrics.{}", name);
                Where metric_at = inner(at, metric.first);
                // Short form `name: regex` (direction by the documented default), or the long
                // form `name: {regex: ..., better: higher|lower, unit: ...}`.
                MetricDefinition definition = definition_of(name, {});
                if (metric.second.IsMap()) {
                    if (auto ok = check_map(metric.second, metric_at, metric_what, {"regex", "better", "unit"}); !ok)
                        return ok.error();
                    if (!metric.second["regex"].IsDefined())
                        return error_at(mark_of(metric.second, metric_at),
                                        fmt::format("{} needs `regex:` (with one capture group)", metric_what));
                    if (metric.second["better"].IsDefined()) {
                        auto better = read_scalar(metric.second["better"], metric_at, metric_what + ".better");
                        if (!better) return better.error();
                        auto direction = parse_better(better->text, better->mark.to_string() + ": " + metric_what);
                        if (!direction) return direction.error();
                        definition.better = *direction;
                    }
                    if (metric.second["unit"].IsDefined()) {
                        auto unit = read_scalar(metric.second["unit"], metric_at, metric_what + ".unit");
                        if (!unit) return unit.error();
                        definition.unit = unit->text;
                    }
                }
                // (yaml-cpp: assigning to a Node would overwrite what it refers to; initialise once.)
                const YAML::Node regex_node = metric.second.IsMap() ? metric.second["regex"] : metric.second;
                auto value = read_scalar(regex_node, metric_at, metric_what);
                if (!value) return value.error();
                if (auto ok = check_regex(value->text, value->mark, metric_what, 1); !ok) return ok.error();
                workload.metrics.emplace_back(name, value->text);
                workload.metric_definitions.push_back(std::move(definition));
            }
        } else if (key == "rules") {
            if (!entry.second.IsSequence())
                return error_at(mark_of(entry.second, at),
                                "workload.rules must be a list of {name, regex, class, "
                                "fatal} maps");
            std::size_t index = 0;
            for (const auto& item : entry.second) {
                auto rule = parse_rule(item, at, index++);
                if (!rule) return rule.error();
                workload.rules.push_back(std::move(*rule));
            }
        }
    }
    return workload;
}

}  // namespace ncclsweep::spec::yaml
