// User watcher rules: a rules file (`--rules FILE`) and the workload's ready/metrics/rules.
// yaml-cpp exceptions are caught here and become Errors with file:line:col.
#include <fmt/format.h>
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "core/watch/rule_catalog.hpp"

namespace ncclsweep::inline watch {
namespace {

constexpr std::string_view k_rule_keys = "name, regex, class, fatal, severity, effect, metric, example";

SourceMark mark_of(const YAML::Node& node, const std::string& origin) {
    const auto m = node.Mark();
    if (m.is_null()) return SourceMark{origin, 0, 0};
    return SourceMark{origin, m.line + 1, m.column + 1};
}

Error at(const SourceMark& mark, const std::string& what) {
    return Error::bad_input(fmt::format("{}: {}", mark.to_string(), what));
}

Result<std::string> scalar(const YAML::Node& node, const std::string& key, const std::string& origin) {
    if (!node.IsScalar())
        return at(mark_of(node, origin), fmt::format("`{}` must be a single value (text)", key));
    return node.Scalar();
}

Result<Severity> parse_severity(const std::string& text, const SourceMark& mark) {
    if (text == "fatal") return Severity::fatal;
    if (text == "warning") return Severity::warning;
    if (text == "progress") return Severity::progress;
    if (text == "info") return Severity::info;
    return at(mark, fmt::format("unknown severity '{}'; use fatal, warning, progress or info", text));
}

Result<PhaseEffect> parse_effect(const std::string& text, const SourceMark& mark) {
    for (auto effect : {PhaseEffect::none, PhaseEffect::capture_begin, PhaseEffect::capture_end,
                        PhaseEffect::ready, PhaseEffect::measuring, PhaseEffect::done})
        if (text == to_string(effect)) return effect;
    return at(mark, fmt::format(
                        "unknown effect '{}'; use none, capture_begin, capture_end, ready, measuring or done",
                        text));
}

Result<bool> parse_bool(const std::string& text, const SourceMark& mark) {
    if (text == "true" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "no" || text == "off") return false;
    return at(mark, fmt::format("`fatal` must be true or false, not '{}'", text));
}

/// Checks the regex now so the error points at the regex value, not at a later compile.
Result<void> check_regex(const Rule& rule) {
    RE2::Options options;
    options.set_case_sensitive(false);
    options.set_log_errors(false);
    RE2 regex(rule.pattern, options);
    if (!regex.ok())
        return at(rule.mark, fmt::format("rule '{}': invalid regex '{}': {}; fix the pattern (RE2 syntax: no "
                                         "backreferences or lookaround)",
                                         rule.name, rule.pattern, regex.error()));
    if (rule.extract == Extract::single_group && regex.NumberOfCapturingGroups() < 1)
        return at(rule.mark,
                  fmt::format("rule '{}': metric regex '{}' has no capture group; put the number in "
                              "parentheses, e.g. 'tok/s: ([0-9.]+)'",
                              rule.name, rule.pattern));
    return success();
}

Result<Rule> parse_rule(const YAML::Node& node, const std::string& origin) {
    const auto node_mark = mark_of(node, origin);
    if (!node.IsMap())
        return at(node_mark, fmt::format("a rule must be a mapping with keys {}", k_rule_keys));
    Rule rule;
    rule.mark = node_mark;
    std::optional<Severity> severity;
    std::optional<bool> fatal;
    SourceMark severity_mark;
    for (const auto& entry : node) {
        const auto key = entry.first.as<std::string>();
        const auto mark = mark_of(entry.second, origin);
        auto value = scalar(entry.second, key, origin);
        if (!value) return value.error();
        if (key == "name")
            rule.name = *value;
        else if (key == "regex") {
            rule.pattern = *value;
            rule.mark = mark;  // regex errors point at the regex itself
        } else if (key == "class")
            rule.failure_class = *value;
        else if (key == "example")
            rule.example = *value;
        else if (key == "metric") {
            rule.metric = *value;
            rule.extract = Extract::single_group;
        } else if (key == "severity") {
            auto parsed = parse_severity(*value, mark);
            if (!parsed) return parsed.error();
            severity = *parsed;
            severity_mark = mark;
        } else if (key == "fatal") {
            auto parsed = parse_bool(*value, mark);
            if (!parsed) return parsed.error();
            fatal = *parsed;
        } else if (key == "effect") {
            auto parsed = parse_effect(*value, mark);
            if (!parsed) return parsed.error();
            rule.effect = *parsed;
        } else {
            return at(mark_of(entry.first, origin),
                      fmt::format("unknown rule key '{}'; valid keys: {}", key, k_rule_keys));
        }
    }
    if (rule.name.empty()) return at(node_mark, "this rule has no `name:`; give every rule a unique name");
    if (rule.pattern.empty()) return at(node_mark, fmt::format("rule '{}' has no `regex:`", rule.name));
    if (severity && fatal && (*severity == Severity::fatal) != *fatal)
        return at(severity_mark,
                  fmt::format("rule '{}': `severity` and `fatal` disagree; keep one of them", rule.name));
    // Default: fatal, unless the rule only marks a phase or records a metric.
    const bool data_only = rule.effect != PhaseEffect::none || rule.extract == Extract::single_group;
    rule.severity = severity ? *severity
                    : fatal  ? (*fatal ? Severity::fatal : Severity::warning)
                             : (data_only ? Severity::progress : Severity::fatal);
    if (rule.failure_class.empty() &&
        (rule.severity == Severity::fatal || rule.severity == Severity::warning))
        rule.failure_class = "user";
    if (auto ok = check_regex(rule); !ok) return ok.error();
    return rule;
}

}  // namespace

Result<std::vector<Rule>> parse_rules_yaml(const std::string& text, const std::string& origin) {
    try {
        const auto root = YAML::Load(text);
        YAML::Node list = root;
        if (root.IsMap() && root["rules"]) list = root["rules"];
        if (!list.IsSequence())
            return at(mark_of(root, origin), "expected a list of rules (or a map with a `rules:` list)");
        std::vector<Rule> rules;
        for (const auto& node : list) {
            auto rule = parse_rule(node, origin);
            if (!rule) return rule.error();
            rules.push_back(std::move(rule).value());
        }
        return rules;
    } catch (const YAML::Exception& e) {
        return at(SourceMark{origin, e.mark.line + 1, e.mark.column + 1},
                  fmt::format("YAML error: {}", e.msg));
    }
}

Result<std::vector<Rule>> load_rules_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error::bad_input(fmt::format("{}: cannot read the rules file; check the --rules path", path));
    std::ostringstream text;
    text << in.rdbuf();
    return parse_rules_yaml(text.str(), path);
}

Result<std::vector<Rule>> rules_from_workload(const WorkloadSpec& workload) {
    auto rules = rules_from_specs(workload.rules);
    if (!workload.ready.empty()) {
        Rule ready;
        ready.name = "workload_ready";
        ready.pattern = workload.ready;
        ready.severity = Severity::progress;
        ready.effect = PhaseEffect::ready;
        ready.mark = workload.mark;
        rules.push_back(std::move(ready));
    }
    for (const auto& [name, regex] : workload.metrics) {
        Rule metric;
        metric.name = "workload_metric_" + name;
        metric.pattern = regex;
        metric.severity = Severity::progress;
        metric.extract = Extract::single_group;
        metric.metric = name;
        metric.mark = workload.mark;
        rules.push_back(std::move(metric));
    }
    for (const auto& rule : rules)
        if (auto ok = check_regex(rule); !ok) return ok.error();
    return rules;
}

Result<std::shared_ptr<const RuleCatalog>> catalog_for(const Spec& spec, const std::string& rules_file) {
    auto workload_rules = rules_from_workload(spec.workload);
    if (!workload_rules) return workload_rules.error();
    std::vector<Rule> user = std::move(*workload_rules);
    if (!rules_file.empty()) {
        auto loaded = load_rules_file(rules_file);
        if (!loaded) return loaded.error();
        user.insert(user.end(), loaded->begin(), loaded->end());
    }
    return RuleCatalog::with_user_rules(user);
}

}  // namespace ncclsweep::inline watch
