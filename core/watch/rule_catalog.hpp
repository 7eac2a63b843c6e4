#pragma once
// Watcher rules: the built-in catalog (docs/watcher.md), user rules from YAML or the spec,
// and the compiled form the watcher matches lines against. A literal prefilter
// (core/watch/rule_prefilter.hpp) finds the few rules a line can match from the literals their
// regexes need, and only those run their own RE2; all rules are also compiled into one RE2::Set,
// the reference answer and the fallback. RE2 runs in linear time, so no line can hang it.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/spec/spec.hpp"
#include "core/watch/rule_prefilter.hpp"

namespace re2 {
class RE2;
}  // namespace re2

namespace ncclsweep::inline watch {

/// What a matching line means for the experiment.
enum class Severity {
    fatal,     ///< the experiment failed: kill it now
    warning,   ///< worth recording, not a failure
    progress,  ///< phase change or measured value
    info,      ///< data only (NCCL TUNING/ENV lines for the effective configuration)
};

/// Phase change a matching line causes.
enum class PhaseEffect { none, capture_begin, capture_end, ready, measuring, done };

/// How a matching line's data is read.
enum class Extract {
    named_groups,    ///< numeric named groups (?P<name>...) become metrics
    single_group,    ///< capture group 1 becomes metric `Rule::metric` (workload.metrics)
    json_event,      ///< a tpverify --json event line, parsed with nlohmann::json
    tpverify_error,  ///< "tpverify: <phase>: <api> failed: <what>"; class from phase/api/what
    nccl_effective,  ///< NCCL TUNING/ENV line for the effective configuration
};

/// One rule. Patterns are RE2 syntax, matched case-insensitively anywhere in a line.
struct Rule {
    std::string name;     ///< stable identifier (a user rule with a built-in's name replaces it)
    std::string pattern;  ///< RE2 pattern
    std::string
        failure_class;  ///< graph_capture, nccl, cuda, oom, python, sitecustomize, hang, server, crash, ...
    Severity severity = Severity::fatal;
    PhaseEffect effect = PhaseEffect::none;
    Extract extract = Extract::named_groups;
    /// A generic fatal rule (Python traceback, bare "CUDA error:") whose class a more specific
    /// fatal rule matching within the diagnosis' after-context window replaces.
    bool generic = false;
    std::string metric;   ///< metric name for Extract::single_group
    std::string example;  ///< a real-looking line it matches (docs and tests)
    SourceMark mark;      ///< where a user rule was written (empty for built-ins)
};

/// The built-in catalog, in priority order (when several fatal rules match one line, the
/// first in this order decides the class).
[[nodiscard]] const std::vector<Rule>& builtin_rules();

/// Converts parsed spec rules (`workload.rules`) to rules; regexes are checked later by
/// RuleCatalog::compile.
[[nodiscard]] std::vector<Rule> rules_from_specs(const std::vector<RuleSpec>& specs);

/// Rules from the workload's `ready:` regex (-> ready) and `metrics:` (name -> regex with one
/// capture group), plus its `rules:`. Errors name the rule and the spec location.
[[nodiscard]] Result<std::vector<Rule>> rules_from_workload(const WorkloadSpec& workload);

/// Loads a rules file (`--rules FILE`): a YAML list (or a map with a `rules:` list) of
/// {name, regex, class, fatal: bool | severity: fatal|warning|progress, effect?, metric?}.
/// Errors carry file:line:col and say what to fix.
[[nodiscard]] Result<std::vector<Rule>> load_rules_file(const std::string& path);

/// Same as load_rules_file for text already in memory; `origin` names it in errors.
[[nodiscard]] Result<std::vector<Rule>> parse_rules_yaml(const std::string& text, const std::string& origin);

/// User rules first (in their order), then the built-ins not replaced by a user rule of the
/// same name. Duplicate user names are an error.
[[nodiscard]] Result<std::vector<Rule>> merge_rules(const std::vector<Rule>& user,
                                                    const std::vector<Rule>& builtins);

/// Rules compiled for matching. Immutable after compile(); share one per sweep.
class RuleCatalog {
public:
    ~RuleCatalog();
    RuleCatalog(const RuleCatalog&) = delete;
    RuleCatalog& operator=(const RuleCatalog&) = delete;

    /// Compiles every rule (case-insensitive) and the prefilter set. An invalid regex gives a
    /// bad_input Error naming the rule, its file:line:col and RE2's message.
    [[nodiscard]] static Result<std::shared_ptr<const RuleCatalog>> compile(std::vector<Rule> rules);
    /// Built-ins plus `user` (see merge_rules), compiled.
    [[nodiscard]] static Result<std::shared_ptr<const RuleCatalog>> with_user_rules(
        const std::vector<Rule>& user);

    /// Indexes of the rules matching `line`, ascending (= priority order); `hits` is reused.
    /// Through the literal prefilter when there is one, else the RE2::Set: the same answer.
    void match(std::string_view line, std::vector<int>& hits) const;
    /// match() for a caller that reads each hit's data anyway: a rule whose only use is its
    /// capture groups (a progress rule with no phase effect whose groups become metrics,
    /// `extracted_alone()`) may also be returned when its literals are in the line but its
    /// regex does not match — the caller's own submatch run then finds nothing. Saves running
    /// such a regex twice on every metric line.
    /// starts[i] is where the literal every match of rule hits[i] begins with first occurs in
    /// the line, or npos when that is not known (RulePrefilter::literal_start()): a submatch search may
    /// start there instead of reading the whole line.
    void candidates(std::string_view line, std::vector<int>& hits, std::vector<std::size_t>& starts) const;
    /// True for a rule that candidates() may return unconfirmed (see there).
    [[nodiscard]] bool extracted_alone(int index) const {
        return m_extracted_alone[static_cast<std::size_t>(index)];
    }
    /// The same as match(), always through the RE2::Set of all rules (the reference the
    /// prefilter is tested against).
    void match_with_set(std::string_view line, std::vector<int>& hits) const;
    /// The literal prefilter, or nullptr when the rules could not have one (match() then uses
    /// the set).
    [[nodiscard]] const RulePrefilter* prefilter() const { return m_prefilter.get(); }
    /// Rule `index`.
    [[nodiscard]] const Rule& rule(int index) const { return m_rules[static_cast<std::size_t>(index)]; }
    /// Compiled regex of rule `index` (for submatches).
    [[nodiscard]] const re2::RE2& regex(int index) const {
        return *m_regexes[static_cast<std::size_t>(index)];
    }
    /// Number of rules.
    [[nodiscard]] std::size_t size() const { return m_rules.size(); }
    /// All rules, in priority order.
    [[nodiscard]] const std::vector<Rule>& rules() const { return m_rules; }
    /// Index of the rule called `name`, -1 if none.
    [[nodiscard]] int find(std::string_view name) const;

private:
    struct Prefilter;  // holds the RE2::Set (a nested class, so not forward-declarable)
    RuleCatalog();
    std::vector<Rule> m_rules;
    std::vector<std::unique_ptr<re2::RE2>> m_regexes;
    std::unique_ptr<Prefilter> m_set;
    std::unique_ptr<const RulePrefilter> m_prefilter;
    std::vector<bool> m_extracted_alone;  ///< rule -> candidates() may leave it unconfirmed
};

/// Text of a Severity ("fatal", ...).
[[nodiscard]] std::string_view to_string(Severity severity);
/// Text of a PhaseEffect ("none", "capture_begin", ...).
[[nodiscard]] std::string_view to_string(PhaseEffect effect);

/// The catalog a sweep of `spec` watches with: the workload's own rules (`fatal:`, `ready:`,
/// `metrics:`), then those of `rules_file` (`--rules`, "" for none), then the built-ins.
[[nodiscard]] Result<std::shared_ptr<const RuleCatalog>> catalog_for(const Spec& spec,
                                                                     const std::string& rules_file);

}  // namespace ncclsweep::inline watch
