// `search:` (prune, race, budget) and budgets: YAML -> SearchSpec, "2h" / "60 runs" -> Budget.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/spec/spec_parser.hpp"
#include "core/spec/spec_sections.hpp"
#include "core/spec/spec_yaml.hpp"

namespace ncclsweep::inline spec {

std::string Budget::to_string() const {
    if (runs > 0) return fmt::format("{} runs", runs);
    if (seconds <= 0) return "none";
    if (std::fmod(seconds, 3600) == 0) return fmt::format("{}h", seconds / 3600);
    if (std::fmod(seconds, 60) == 0) return fmt::format("{}m", seconds / 60);
    return fmt::format("{}s", seconds);
}

std::string SearchSpec::describe(int repeats, bool with_budget) const {
    std::string out;
    auto add = [&out](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
    if (prune_after > 0)
        add(fmt::format("prune a value after {} failure{} of one class", prune_after,
                        prune_after == 1 ? "" : "s"));
    if (race)
        add(fmt::format("race {}..{} repeats at {}% confidence", race->min_repeats, max_repeats(repeats),
                        race->confidence * 100));
    if (!metric.empty() && (prune_after > 0 || race)) add("metric " + metric);
    if (with_budget && !budget.empty()) add("budget " + budget.to_string());
    return out;
}

Result<Budget> parse_budget(std::string_view text, std::string_view what) {
    auto bad = [&]() {
        return Error::bad_input(fmt::format(
            "{} must be a duration such as 2h, 90m or 600s, or a number of workload runs such as '60 runs', "
            "not '{}'",
            what, text));
    };
    std::string_view rest = text;
    while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
    Budget budget;
    if (rest.ends_with("runs") || rest.ends_with("run")) {
        rest.remove_suffix(rest.ends_with("runs") ? 4 : 3);
        while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
        long long runs = 0;
        auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), runs);
        if (rest.empty() || ec != std::errc() || end != rest.data() + rest.size() || runs < 1 ||
            runs > 100000000)
            return bad();
        budget.runs = static_cast<int>(runs);
        return budget;
    }
    double unit = 1;
    if (!rest.empty() && (rest.back() == 's' || rest.back() == 'm' || rest.back() == 'h')) {
        unit = rest.back() == 's' ? 1 : rest.back() == 'm' ? 60 : 3600;
        rest.remove_suffix(1);
    }
    double number = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
    if (rest.empty() || ec != std::errc() || end != rest.data() + rest.size() || !(number > 0) ||
        !std::isfinite(number))
        return bad();
    budget.seconds = number * unit;
    return budget;
}

namespace yaml {
namespace {

Result<RaceSpec> parse_race(const YAML::Node& node, const Where& where) {
    if (auto ok = check_map(node, where, "search.race", {"min_repeats", "max_repeats", "confidence"}); !ok)
        return ok.error();
    RaceSpec race;
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        const Where at = inner(where, entry.first);
        if (key == "confidence") {
            auto value = read_scalar(entry.second, at, "search.race.confidence");
            if (!value) return value.error();
            double number = 0;
            const std::string& text = value->text;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
            if (ec != std::errc() || end != text.data() + text.size() || !(number >= 0.5 && number < 1))
                return error_at(value->mark,
                                fmt::format("search.race.confidence must be a number in [0.5, 1) "
                                            "such as 0.95 (the U test's alpha is 1 - confidence), not '{}'",
                                            text));
            race.confidence = number;
            continue;
        }
        auto number = read_int(entry.second, at, "search.race." + key, 1, 1000);
        if (!number) return number.error();
        (key == "min_repeats" ? race.min_repeats : race.max_repeats) = static_cast<int>(*number);
    }
    if (race.max_repeats != 0 && race.max_repeats < race.min_repeats)
        return error_at(
            mark_of(node, where),
            fmt::format("search.race.max_repeats ({}) is below min_repeats ({}); a point cannot get "
                        "fewer samples than every point gets first",
                        race.max_repeats, race.min_repeats));
    return race;
}

}  // namespace

Result<SearchSpec> parse_search(const YAML::Node& node, const Where& where) {
    if (auto ok = check_map(node, where, "search", {"prune", "race", "budget", "metric"}); !ok)
        return ok.error();
    SearchSpec search;
    search.mark = where.fallback;
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        const Where at = inner(where, entry.first);
        if (key == "prune") {
            if (auto ok = check_map(entry.second, at, "search.prune", {"after"}); !ok) return ok.error();
            if (!entry.second["after"])
                return error_at(at.fallback, "search.prune needs `after:`, e.g. prune: {after: 2}");
            auto after = read_int(entry.second["after"], at, "search.prune.after", 1, 1000);
            if (!after) return after.error();
            search.prune_after = static_cast<int>(*after);
        } else if (key == "race") {
            auto race = parse_race(entry.second, at);
            if (!race) return race.error();
            search.race = *race;
        } else if (key == "budget") {
            auto value = read_scalar(entry.second, at, "search.budget");
            if (!value) return value.error();
            auto budget = parse_budget(value->text, "search.budget");
            if (!budget) return error_at(value->mark, budget.error().message);
            search.budget = *budget;
        } else {
            auto value = read_scalar(entry.second, at, "search.metric");
            if (!value) return value.error();
            if (value->text.empty())
                return error_at(value->mark, "search.metric is empty; name a metric such as tok_s");
            search.metric = value->text;
        }
    }
    return search;
}

}  // namespace yaml
}  // namespace ncclsweep::inline spec
