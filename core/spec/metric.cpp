#include "core/spec/metric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

namespace ncclsweep::inline spec {
namespace {

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

/// True when `unit` ("_us") is a whole `_`-separated word of `name` ("verify_us_p50", "warm_us").
bool has_word(std::string_view name, std::string_view unit) {
    for (std::size_t at = name.find(unit); at != std::string_view::npos; at = name.find(unit, at + 1)) {
        const std::size_t end = at + unit.size();
        if (end == name.size() || name[end] == '_') return true;
    }
    return false;
}

}  // namespace

stats::Direction default_direction(std::string_view name) {
    std::string m(name);
    std::transform(m.begin(), m.end(), m.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (contains(m, "tok_s") || contains(m, "per_s") || contains(m, "throughput") ||
        contains(m, "bandwidth") || contains(m, "gbps"))
        return stats::Direction::higher_is_better;
    if (has_word(m, "_s") || has_word(m, "_ms") || has_word(m, "_us") || has_word(m, "_ns") ||
        contains(m, "latency") || contains(m, "ttft") || contains(m, "itl") || contains(m, "tpot") ||
        contains(m, "rsd") || m.ends_with("_seconds"))
        return stats::Direction::lower_is_better;
    return stats::Direction::higher_is_better;
}

MetricDefinition definition_of(std::string_view name, const std::vector<MetricDefinition>& declared) {
    for (const auto& d : declared)
        if (d.name == name) return d;
    return MetricDefinition{std::string(name), "", default_direction(name)};
}

Result<stats::Direction> parse_better(std::string_view text, std::string_view where) {
    if (text == "higher") return stats::Direction::higher_is_better;
    if (text == "lower") return stats::Direction::lower_is_better;
    return Error::bad_input(fmt::format("{}: better must be 'higher' or 'lower', not '{}'", where, text));
}

std::string_view better_word(stats::Direction direction) {
    return direction == stats::Direction::higher_is_better ? "higher" : "lower";
}

std::string metrics_to_json(const std::vector<MetricDefinition>& metrics) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& m : metrics)
        list.push_back({{"name", m.name}, {"unit", m.unit}, {"better", std::string(better_word(m.better))}});
    return list.dump();
}

Result<std::vector<MetricDefinition>> metrics_from_json(std::string_view text) {
    std::vector<MetricDefinition> out;
    if (text.empty()) return out;
    auto list = nlohmann::json::parse(text, nullptr, false);
    if (list.is_discarded() || !list.is_array())
        return Error::bad_input("metric definitions are not a JSON list of {name, unit, better}");
    for (const auto& item : list) {
        if (!item.is_object() || !item.contains("name") || !item["name"].is_string())
            return Error::bad_input("a metric definition has no name");
        MetricDefinition m;
        m.name = item["name"].get<std::string>();
        if (item.contains("unit") && item["unit"].is_string()) m.unit = item["unit"].get<std::string>();
        auto better = parse_better(item.value("better", std::string("higher")), "metric " + m.name);
        if (!better) return better.error();
        m.better = *better;
        out.push_back(std::move(m));
    }
    return out;
}

Result<MetricChoice> parse_metric_choice(std::string_view text) {
    MetricChoice choice;
    std::string_view name = text;
    std::optional<stats::Direction> direction;
    if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
        name = text.substr(0, colon);
        const std::string_view suffix = text.substr(colon + 1);
        if (suffix == "higher")
            direction = stats::Direction::higher_is_better;
        else if (suffix == "lower")
            direction = stats::Direction::lower_is_better;
        else
            return Error::bad_input(
                fmt::format("metric '{}': unknown direction '{}'; write NAME, NAME:higher or "
                            "NAME:lower (e.g. verify_us_p50:lower)",
                            text, suffix));
    }
    if (name.empty())
        return Error::bad_input(
            fmt::format("metric '{}' has no name; write e.g. tok_s or verify_us_p50:lower", text));
    choice.name = std::string(name);
    choice.direction = direction.value_or(default_direction(name));
    choice.direction_given = direction.has_value();
    return choice;
}

}  // namespace ncclsweep::inline spec
