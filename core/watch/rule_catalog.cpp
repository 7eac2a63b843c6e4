// Compiling and matching the rule catalog: one RE2::Set as a prefilter, one RE2 per rule for
// submatches. See core/watch/rule_builtins.cpp for the built-in rules themselves.
#include "core/watch/rule_catalog.hpp"

#include <fmt/format.h>
#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <set>

namespace ncclsweep::inline watch {
namespace {

/// The DFA of ~50 case-insensitive patterns is larger than RE2's 8 MiB default allows for a
/// Set; 64 MiB keeps it cached. Should it still run out, match() falls back to single regexes.
constexpr std::int64_t k_set_max_mem = 64ll << 20;

RE2::Options rule_options() {
    RE2::Options options;
    options.set_case_sensitive(false);
    options.set_log_errors(false);
    return options;
}

std::string where(const Rule& rule) {
    if (rule.mark.file.empty()) return fmt::format("built-in rule '{}'", rule.name);
    return fmt::format("{}: rule '{}'", rule.mark.to_string(), rule.name);
}

}  // namespace

struct RuleCatalog::Prefilter {
    explicit Prefilter(const RE2::Options& options) : set(options, RE2::UNANCHORED) {}
    RE2::Set set;
};

RuleCatalog::RuleCatalog() = default;
RuleCatalog::~RuleCatalog() = default;

Result<std::shared_ptr<const RuleCatalog>> RuleCatalog::compile(std::vector<Rule> rules) {
    std::shared_ptr<RuleCatalog> catalog(new RuleCatalog());
    auto set_options = rule_options();
    set_options.set_max_mem(k_set_max_mem);
    catalog->m_set = std::make_unique<Prefilter>(set_options);
    for (const auto& rule : rules) {
        if (rule.name.empty())
            return Error::bad_input(
                fmt::format("{}: a watcher rule has no name; give every rule a unique `name:`",
                            rule.mark.file.empty() ? "built-in" : rule.mark.to_string()));
        if (rule.pattern.empty())
            return Error::bad_input(
                fmt::format("{}: the regex is empty; write what the line contains", where(rule)));
        auto regex = std::make_unique<RE2>(rule.pattern, rule_options());
        if (!regex->ok())
            return Error::bad_input(
                fmt::format("{}: invalid regex '{}': {}; fix the pattern (RE2 syntax: no "
                            "backreferences or lookaround)",
                            where(rule), rule.pattern, regex->error()));
        if (rule.extract == Extract::single_group && regex->NumberOfCapturingGroups() < 1)
            return Error::bad_input(
                fmt::format("{}: metric regex '{}' has no capture group; put the number in "
                            "parentheses, e.g. 'tok/s: ([0-9.]+)'",
                            where(rule), rule.pattern));
        std::string set_error;
        if (catalog->m_set->set.Add(rule.pattern, &set_error) < 0)
            return Error::bad_input(
                fmt::format("{}: invalid regex '{}': {}", where(rule), rule.pattern, set_error));
        catalog->m_regexes.push_back(std::move(regex));
    }
    if (!catalog->m_set->set.Compile())
        return Error::internal(
            "the watcher's rule set could not be compiled (RE2 ran out of memory); use fewer or "
            "simpler user rules");
    std::vector<std::string> patterns;
    std::vector<const RE2*> regexes;
    for (std::size_t i = 0; i < rules.size(); ++i) {
        patterns.push_back(rules[i].pattern);
        regexes.push_back(catalog->m_regexes[i].get());
    }
    catalog->m_prefilter = RulePrefilter::build(patterns, regexes);
    for (std::size_t i = 0; i < rules.size(); ++i) {
        const Rule& rule = rules[i];
        const RE2& regex = *catalog->m_regexes[i];
        const bool groups = rule.extract == Extract::single_group ? regex.NumberOfCapturingGroups() >= 1
                                                                  : rule.extract == Extract::named_groups &&
                                                                        !regex.NamedCapturingGroups().empty();
        catalog->m_extracted_alone.push_back(rule.severity == Severity::progress &&
                                             rule.effect == PhaseEffect::none && groups);
    }
    catalog->m_rules = std::move(rules);
    return std::shared_ptr<const RuleCatalog>(std::move(catalog));
}

Result<std::shared_ptr<const RuleCatalog>> RuleCatalog::with_user_rules(const std::vector<Rule>& user) {
    auto merged = merge_rules(user, builtin_rules());
    if (!merged) return merged.error();
    return compile(std::move(merged).value());
}

void RuleCatalog::match(std::string_view line, std::vector<int>& hits) const {
    if (m_prefilter && m_prefilter->match(line, hits)) return;
    match_with_set(line, hits);
}

void RuleCatalog::candidates(std::string_view line, std::vector<int>& hits,
                             std::vector<std::size_t>& starts) const {
    if (m_prefilter && m_prefilter->match(line, hits, &m_extracted_alone, &starts)) return;
    match_with_set(line, hits);
    starts.assign(hits.size(), std::string_view::npos);
}

void RuleCatalog::match_with_set(std::string_view line, std::vector<int>& hits) const {
    hits.clear();
    const re2::StringPiece text(line.data(), line.size());
    RE2::Set::ErrorInfo info{};
    if (m_set->set.Match(text, &hits, &info)) {
        std::sort(hits.begin(), hits.end());
        return;
    }
    if (info.kind != RE2::Set::kOutOfMemory) return;
    // The set's DFA ran out of memory on this line: still linear, one regex at a time.
    hits.clear();
    for (std::size_t i = 0; i < m_regexes.size(); ++i)
        if (RE2::PartialMatch(text, *m_regexes[i])) hits.push_back(static_cast<int>(i));
}

int RuleCatalog::find(std::string_view name) const {
    for (std::size_t i = 0; i < m_rules.size(); ++i)
        if (m_rules[i].name == name) return static_cast<int>(i);
    return -1;
}

Result<std::vector<Rule>> merge_rules(const std::vector<Rule>& user, const std::vector<Rule>& builtins) {
    std::set<std::string, std::less<>> names;
    std::vector<Rule> merged;
    merged.reserve(user.size() + builtins.size());
    for (const auto& rule : user) {
        if (!names.insert(rule.name).second)
            return Error::bad_input(fmt::format("{}: rule name '{}' is used twice; rule names must be unique",
                                                rule.mark.file.empty() ? "rules" : rule.mark.to_string(),
                                                rule.name));
        merged.push_back(rule);
    }
    for (const auto& rule : builtins)
        if (!names.contains(rule.name)) merged.push_back(rule);
    return merged;
}

std::vector<Rule> rules_from_specs(const std::vector<RuleSpec>& specs) {
    std::vector<Rule> rules;
    rules.reserve(specs.size());
    for (const auto& spec : specs) {
        Rule rule;
        rule.name = spec.name;
        rule.pattern = spec.regex;
        rule.failure_class = spec.failure_class.empty() ? "user" : spec.failure_class;
        rule.severity = spec.fatal ? Severity::fatal : Severity::warning;
        rule.mark = spec.mark;
        rules.push_back(std::move(rule));
    }
    return rules;
}

std::string_view to_string(Severity severity) {
    switch (severity) {
        case Severity::fatal:
            return "fatal";
        case Severity::warning:
            return "warning";
        case Severity::progress:
            return "progress";
        case Severity::info:
            return "info";
    }
    return "?";
}

std::string_view to_string(PhaseEffect effect) {
    switch (effect) {
        case PhaseEffect::none:
            return "none";
        case PhaseEffect::capture_begin:
            return "capture_begin";
        case PhaseEffect::capture_end:
            return "capture_end";
        case PhaseEffect::ready:
            return "ready";
        case PhaseEffect::measuring:
            return "measuring";
        case PhaseEffect::done:
            return "done";
    }
    return "?";
}

}  // namespace ncclsweep::inline watch
