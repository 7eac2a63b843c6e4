// Parsers of the `target:` and `workload:` sections of a spec.
#include <fmt/format.h>

#include <charconv>

#include "core/spec/metric.hpp"
#include "core/spec/spec_metrics.hpp"
#include "core/spec/spec_sections.hpp"

namespace ncclsweep::inline spec::yaml {
namespace {

Result<void> check_url(const SpecValue& url) {
    if (url.text == "local") return success();
    if (url.text.rfind("slurm://", 0) == 0) {
        const std::string partition = url.text.substr(8);
        if (partition.empty() || partition.find_first_of("/ \t\n?#:@,") != std::string::npos)
            return error_at(url.mark, fmt::format("target '{}' does not name one Slurm partition; write "
                                                  "`slurm://PARTITION` (e.g. slurm://gpu)",
                                                  url.text));
        return success();
    }
    const std::string_view prefix = "ssh://";
    std::string_view rest = url.text;
    auto bad = [&](std::string_view why) {
        return error_at(
            url.mark,
            fmt::format("target '{}' {}; write `local`, `ssh://user@host[:port]` or `slurm://PARTITION`",
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

Result<SlurmSpec> parse_slurm(const YAML::Node& node, const Where& where) {
    SlurmSpec slurm;
    if (auto ok = check_map(node, where, "target.slurm",
                            {"array_limit", "gres", "time", "account", "sbatch", "poll", "pending_timeout"});
        !ok)
        return ok.error();
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        Where at = inner(where, entry.first);
        std::string what = "target.slurm." + key;
        if (entry.second.IsNull()) continue;  // `account: null` = Slurm's default
        if (key == "array_limit") {
            auto value = read_int(entry.second, at, what, 1, 100000);
            if (!value) return value.error();
            slurm.array_limit = static_cast<int>(*value);
        } else if (key == "poll") {
            auto value = read_seconds(entry.second, at, what);
            if (!value) return value.error();
            if (*value < 0.1)
                return error_at(mark_of(entry.second, at), "target.slurm.poll must be at least 0.1 s");
            slurm.poll_seconds = *value;
        } else if (key == "pending_timeout") {
            auto value = read_seconds(entry.second, at, what);
            if (!value) return value.error();
            if (*value > 0 && *value < 1)
                return error_at(mark_of(entry.second, at),
                                "target.slurm.pending_timeout must be at least 1 s (0 or null: wait as long "
                                "as Slurm does)");
            if (*value > 0) slurm.pending_timeout_seconds = *value;
        } else if (key == "sbatch") {
            if (!entry.second.IsSequence())
                return error_at(mark_of(entry.second, at),
                                "target.slurm.sbatch must be a list of sbatch options, e.g. "
                                "[\"--exclusive\", \"--qos=high\"]");
            for (std::size_t i = 0; i < entry.second.size(); ++i) {
                auto word = read_scalar(entry.second[i], at, fmt::format("{}[{}]", what, i));
                if (!word) return word.error();
                if (word->text.rfind("--", 0) != 0 || word->text.find_first_of(" \t\n") != std::string::npos)
                    return error_at(word->mark,
                                    fmt::format("{}[{}] '{}' is not one long sbatch option (--name or "
                                                "--name=value, no spaces)",
                                                what, i, word->text));
                if (word->text.rfind("--array", 0) == 0 || word->text.rfind("--output", 0) == 0 ||
                    word->text.rfind("--error", 0) == 0 || word->text.rfind("--partition", 0) == 0)
                    return error_at(word->mark,
                                    fmt::format("{}[{}] '{}' is set by ncclsweep itself (the partition is "
                                                "the URL's, the array its experiments)",
                                                what, i, word->text));
                slurm.sbatch.push_back(word->text);
            }
        } else {
            auto value = read_scalar(entry.second, at, what);
            if (!value) return value.error();
            if (key == "gres") slurm.gres = value->text;
            if (key == "time") slurm.time = value->text;
            if (key == "account") slurm.account = value->text;
        }
    }
    return slurm;
}

Result<std::vector<std::string>> parse_hosts(const YAML::Node& node, const Where& where) {
    if (!node.IsSequence() || node.size() == 0)
        return error_at(mark_of(node, where),
                        "target.hosts must be a non-empty list of ssh:// URLs, e.g. [ssh://a, ssh://b]");
    std::vector<std::string> hosts;
    for (std::size_t i = 0; i < node.size(); ++i) {
        auto url = read_scalar(node[i], where, fmt::format("target.hosts[{}]", i));
        if (!url) return url.error();
        if (url->text.rfind("ssh://", 0) != 0)
            return error_at(url->mark,
                            fmt::format("target.hosts[{}] '{}' is not an ssh:// URL; a pool runs over ssh", i,
                                        url->text));
        if (auto ok = check_url(*url); !ok) return ok.error();
        hosts.push_back(url->text);
    }
    return hosts;
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
    SourceMark workdir_mark;
    if (!node.IsMap()) {
        auto url = read_scalar(node, where, "target");
        if (!url) return url.error();
        if (auto ok = check_url(*url); !ok) return ok.error();
        target.url = url->text;
        return target;
    }
    if (auto ok = check_map(
            node, where, "target",
            {"url", "hosts", "slurm", "env_delivery", "workdir", "identity_file", "accept_new_host_key"});
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
        if (key == "slurm") {
            auto slurm = parse_slurm(entry.second, at);
            if (!slurm) return slurm.error();
            target.slurm = std::move(*slurm);
            continue;
        }
        if (key == "hosts") {
            auto hosts = parse_hosts(entry.second, at);
            if (!hosts) return hosts.error();
            target.hosts = std::move(*hosts);
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
            workdir_mark = value->mark;
        } else if (key == "identity_file") {
            target.identity_file = value->text;
        }
    }
    // sitecustomize.py reaches the workload through PYTHONPATH, whose entries ':' separates: a
    // work directory with one would silently drop the experiment's directory from the path.
    if (target.env_delivery != EnvDelivery::env) {
        const auto bad = target.workdir.find_first_of(":\n\r");
        if (bad != std::string::npos)
            return error_at(
                workdir_mark,
                fmt::format(
                    "target.workdir '{}' contains {}, so the experiments' directories cannot "
                    "go on PYTHONPATH ({}) and sitecustomize.py would never reach the "
                    "workload; choose a path without it, or set target.env_delivery: env",
                    target.workdir, target.workdir[bad] == ':' ? "':'" : "a line break",
                    target.workdir[bad] == ':' ? "':' separates its entries" : "one entry per line break"));
    }
    if (!target.hosts.empty()) {
        if (node["url"])
            return error_at(target.mark,
                            "target has both `url` and `hosts`; a pool is `hosts: [ssh://a, ssh://b]` alone");
        // What the plan, the fingerprint and the sweep record show for a pool.
        target.url = "hosts:";
        for (const auto& host : target.hosts) target.url += (target.url.size() > 6 ? "," : "") + host;
    }
    if (node["slurm"] && target.url.rfind("slurm://", 0) != 0)
        return error_at(target.mark, "target.slurm is given but target.url is not slurm://PARTITION");
    return target;
}

Result<WorkloadSpec> parse_workload(const YAML::Node& node, const Where& where) {
    WorkloadSpec workload;
    workload.mark = mark_of(node, where);
    if (auto ok =
            check_map(node, where, "workload",
                      {"engine", "args", "command", "client", "ready", "metrics", "rules", "stop_after"});
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
        if (has_engine && (key == "client" || key == "ready" || key == "metrics" || key == "stop_after"))
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
            workload.ready_mark = value->mark;
        } else if (key == "stop_after") {
            auto stop = parse_stop_after(entry.second, at);
            if (!stop) return stop.error();
            workload.stop_after = *stop;
        } else if (key == "metrics") {
            if (auto ok = check_open_map(entry.second, at, what); !ok) return ok.error();
            for (const auto& metric : entry.second) {
                const std::string name = metric.first.Scalar();
                std::string metric_what = fmt::format("workload.metrics.{}", name);
                Where metric_at = inner(at, metric.first);
                // Short form `name: regex` (direction by the documented default), or the long
                // form `name: {regex: ..., better: higher|lower, unit: ...}`.
                MetricDefinition definition = definition_of(name, {});
                MetricExtraction extraction;
                if (metric.second.IsMap()) {
                    if (auto ok = check_map(metric.second, metric_at, metric_what,
                                            {"regex", "better", "unit", "aggregate", "warmup"});
                        !ok)
                        return ok.error();
                    if (auto ok = parse_metric_options(metric.second, metric_at, metric_what, extraction);
                        !ok)
                        return ok.error();
                    if (!metric.second["regex"].IsDefined())
                        return error_at(
                            mark_of(metric.second, metric_at),
                            fmt::format("{} needs `regex:` (with one capture group)", metric_what));
                    if (metric.second["better"].IsDefined()) {
                        auto better =
                            read_scalar(metric.second["better"], metric_at, metric_what + ".better");
                        if (!better) return better.error();
                        auto direction =
                            parse_better(better->text, better->mark.to_string() + ": " + metric_what);
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
                if (auto ok = check_number_group(*value, metric_what); !ok) return ok.error();
                workload.metrics.emplace_back(name, value->text);
                workload.metric_definitions.push_back(std::move(definition));
                workload.metric_extraction.push_back(extraction);
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
    if (auto ok = check_server_ends(workload); !ok) return ok.error();
    return workload;
}

}  // namespace ncclsweep::inline spec::yaml
