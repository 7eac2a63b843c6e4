// `workload.metrics` entries and `workload.stop_after` (docs/spec.md "workload"): a metric's
// regex must have one capture group that can capture a number, its matches in a run aggregate
// as the entry says, and a server without a client says what ends its runs.
#include <fmt/format.h>
#include <re2/re2.h>

#include <array>
#include <charconv>
#include <optional>

#include "core/spec/spec_metrics.hpp"

namespace ncclsweep::inline spec::yaml {
namespace {

/// The text of the first capturing group of an RE2 pattern, and where it starts; nullopt when
/// the pattern has none the scanner can find (escapes, classes and (?...) groups skipped).
std::optional<std::pair<std::size_t, std::string>> first_capture(const std::string& pattern) {
    bool in_class = false;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\') {
            ++i;  // the escaped character is literal
            continue;
        }
        if (in_class) {
            if (c == ']') in_class = false;
            continue;
        }
        if (c == '[') {
            in_class = true;
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') ++i;
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') ++i;  // a leading ] is literal
            continue;
        }
        if (c != '(') continue;
        std::size_t body = i + 1;
        if (pattern.compare(i, 3, "(?P") == 0 || pattern.compare(i, 3, "(?<") == 0) {
            const auto close = pattern.find('>', i);
            if (close == std::string::npos) return std::nullopt;
            body = close + 1;  // a named group captures
        } else if (pattern.compare(i, 2, "(?") == 0) {
            continue;  // non-capturing group or flags
        }
        int depth = 1;
        bool klass = false;
        for (std::size_t j = body; j < pattern.size(); ++j) {
            const char d = pattern[j];
            if (d == '\\') {
                ++j;
                continue;
            }
            if (klass) {
                if (d == ']') klass = false;
                continue;
            }
            if (d == '[') {
                klass = true;
                if (j + 1 < pattern.size() && pattern[j + 1] == '^') ++j;
                if (j + 1 < pattern.size() && pattern[j + 1] == ']') ++j;
            } else if (d == '(') {
                ++depth;
            } else if (d == ')' && --depth == 0) {
                return std::make_pair(i, pattern.substr(body, j - body));
            }
        }
        return std::nullopt;
    }
    return std::nullopt;
}

/// Numbers as programs print them: a capture group that matches none of these cannot capture a
/// number (RE2 cannot intersect languages; these cover digits, decimals, signs and exponents
/// of every length a group with a counted repetition may ask for).
const std::vector<std::string>& number_probes() {
    static const std::vector<std::string> probes = [] {
        std::vector<std::string> out;
        std::string digits;
        for (int n = 1; n <= 12; ++n) {
            digits += static_cast<char>('0' + n % 10);
            for (const std::string& base : {digits, digits + ".5", "0." + digits, "-" + digits, "+" + digits})
                out.push_back(base);
            out.push_back(digits + ".25e3");
            out.push_back(digits + "e-3");
            out.push_back(digits + ",000");
        }
        for (const char* extra : {".5", "1.", "1e3", "1E+3", "inf", "nan", "1_000", " 12", "12 "})
            out.emplace_back(extra);
        return out;
    }();
    return probes;
}

Result<Aggregate> parse_aggregate(const SpecValue& value, std::string_view what) {
    if (value.text == "last") return Aggregate::last;
    if (value.text == "median") return Aggregate::median;
    if (value.text == "mean") return Aggregate::mean;
    return error_at(value.mark,
                    fmt::format("{}: '{}' is not last, median or mean (how the matches of one run "
                                "become its value)",
                                what, value.text));
}

}  // namespace

Result<void> check_number_group(const SpecValue& regex, std::string_view what) {
    auto group = first_capture(regex.text);
    if (!group) return success();  // check_regex already counted the groups
    // Quiet: a group whose text alone does not compile is expected here, not worth RE2's log line.
    const RE2 re("(?:" + group->second + ")", RE2::Quiet);
    if (!re.ok()) return success();  // a group whose text alone does not compile: RE2 judged the whole
    for (const auto& probe : number_probes())
        if (RE2::FullMatch(probe, re)) return success();
    return error_at(
        regex.mark,
        fmt::format("{}: the capture group ({}) cannot capture a number, so this metric would never be "
                    "recorded; put the parentheses around the number, e.g. ([0-9.]+), and write literal "
                    "parentheses as \\( and \\)",
                    what, group->second));
}

Result<void> parse_metric_options(const YAML::Node& node, const Where& where, std::string_view what,
                                  MetricExtraction& extraction) {
    if (node["aggregate"].IsDefined()) {
        auto value = read_scalar(node["aggregate"], where, fmt::format("{}.aggregate", what));
        if (!value) return value.error();
        auto aggregate = parse_aggregate(*value, fmt::format("{}.aggregate", what));
        if (!aggregate) return aggregate.error();
        extraction.aggregate = *aggregate;
    }
    if (node["warmup"].IsDefined()) {
        auto warmup = read_int(node["warmup"], where, fmt::format("{}.warmup", what), 0, 100000);
        if (!warmup) return warmup.error();
        extraction.warmup = static_cast<int>(*warmup);
    }
    return success();
}

Result<StopAfter> parse_stop_after(const YAML::Node& node, const Where& where) {
    auto value = read_scalar(node, where, "workload.stop_after");
    if (!value) return value.error();
    StopAfter stop;
    stop.mark = value->mark;
    const std::string& text = value->text;
    if (text == "exit") {
        stop.kind = StopAfter::Kind::exit;
        return stop;
    }
    const auto space = text.find(' ');
    if (space != std::string::npos && text.substr(space + 1) == "matches") {
        int n = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + space, n);
        if (ec == std::errc() && end == text.data() + space && n >= 1) {
            stop.kind = StopAfter::Kind::matches;
            stop.matches = n;
            return stop;
        }
    }
    auto seconds = read_seconds(node, where, "workload.stop_after");
    if (seconds && *seconds > 0) {
        stop.kind = StopAfter::Kind::seconds;
        stop.seconds = *seconds;
        return stop;
    }
    return error_at(
        value->mark,
        fmt::format("workload.stop_after: '{}' is none of `exit` (the command exits by itself), `N "
                    "matches` (stop it once every metric matched N times) or a duration such as "
                    "60s or 5m (stop it that long after it is ready)",
                    text));
}

Result<void> check_server_ends(const WorkloadSpec& workload) {
    if (workload.engine.empty() && !workload.ready.empty() && workload.client.empty() &&
        workload.stop_after.kind == StopAfter::Kind::none)
        return error_at(
            workload.ready_mark,
            "workload.ready makes this command a server that runs until it is stopped, but nothing stops it: "
            "every run would end timed out and its metrics be discarded; add `client: [...]` (a load "
            "generator "
            "started once the server is ready; the server is stopped when it ends), or `stop_after: 20 "
            "matches` "
            "(stop it once every metric matched 20 times), `stop_after: 60s` (that long after it is ready) "
            "or "
            "`stop_after: exit` (it exits by itself)");
    return success();
}

}  // namespace ncclsweep::inline spec::yaml
