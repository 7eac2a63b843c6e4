// What the watcher takes from matching lines: metrics from named groups and tpverify result
// events, failure classes of tpverify's error lines, warnings, and the stored context lines.
#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

#include "core/watch/watcher.hpp"

namespace ncclsweep::inline watch {
namespace {

/// Values kept per metric (a server that logs throughput every second for hours stays bounded).
constexpr std::size_t k_max_values_per_metric = 100000;
/// Submatches read per rule (named groups beyond this are ignored).
constexpr int k_max_groups = 16;
constexpr std::size_t k_max_diagnosis_chars = 16384;

std::optional<double> to_number(std::string_view text) {
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    double value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return value;
}

bool contains_nocase(std::string_view haystack, std::string_view needle) {
    auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
    });
    return it != haystack.end();
}

/// Rule `index`'s regex on `text` with `count` submatches (0 = the whole match), as RE2 finds
/// them searching the whole line. `start` is where the literal every match begins with first
/// occurs (npos when unknown): no match starts before it, so the search starts there, anchored
/// first (a third of the time of a search of the whole line).
bool submatch(const RuleCatalog& catalog, int index, std::size_t start, std::string_view text,
              re2::StringPiece* groups, int count) {
    const re2::RE2& regex = catalog.regex(index);
    const re2::StringPiece line(text.data(), text.size());
    if (start >= text.size()) return regex.Match(line, 0, text.size(), re2::RE2::UNANCHORED, groups, count);
    return regex.Match(line, start, text.size(), re2::RE2::ANCHOR_START, groups, count) ||
           regex.Match(line, start + 1, text.size(), re2::RE2::UNANCHORED, groups, count);
}

std::string_view group(const re2::RE2& regex, const std::array<re2::StringPiece, k_max_groups + 1>& groups,
                       const std::string& name) {
    const auto& names = regex.NamedCapturingGroups();
    auto it = names.find(name);
    if (it == names.end() || it->second > k_max_groups) return {};
    const auto& piece = groups[static_cast<std::size_t>(it->second)];
    return {piece.data(), piece.size()};
}

/// Object levels of a result event read for metrics. tpverify's events are flat; deeper levels
/// are skipped, so a crafted line ({"a":{"a":...}} 10^4 deep) can neither exhaust the stack nor
/// cost quadratic time building ever longer "a.a.a..." names.
constexpr int k_max_field_depth = 4;

/// Every numeric field of a result event; nested objects as "outer.inner", up to k_max_field_depth.
void numeric_fields(const nlohmann::json& object, const std::string& prefix, int depth,
                    std::vector<std::pair<std::string, double>>& out) {
    for (const auto& item : object.items()) {
        const auto& value = item.value();
        if (value.is_number())
            out.emplace_back(prefix + item.key(), value.get<double>());
        else if (value.is_object() && depth < k_max_field_depth)
            numeric_fields(value, prefix + item.key() + ".", depth + 1, out);
    }
}

/// Warnings from 8 ranks differ only in their "host:pid:tid [rank]" prefix.
std::string_view warning_key(std::string_view text) {
    if (auto at = text.find("NCCL WARN"); at != std::string_view::npos) return text.substr(at);
    return text;
}

}  // namespace

std::string tpverify_failure_class(std::string_view phase, std::string_view api, std::string_view what) {
    if (contains_nocase(what, "out of memory")) return "oom";
    if (contains_nocase(what, "timeout") || contains_nocase(what, "timed out")) return "hang";
    if (phase == "capture" || contains_nocase(what, "capturing") || contains_nocase(what, "during capture"))
        return "graph_capture";
    if (contains_nocase(api.substr(0, 4), "nccl")) return "nccl";
    if (contains_nocase(api.substr(0, 2), "cu")) return "cuda";
    return "engine";
}

void Watcher::extract(int index, std::size_t start, std::string_view text, TimePoint when) {
    const Rule& rule = m_catalog->rule(index);
    const re2::RE2& regex = m_catalog->regex(index);
    const int count = std::min(regex.NumberOfCapturingGroups(), k_max_groups);
    if (count <= 0 || (rule.extract != Extract::single_group && regex.NamedCapturingGroups().empty())) return;
    if (m_state == WatchState::failed || m_state == WatchState::timed_out) return;
    std::array<re2::StringPiece, k_max_groups + 1> groups;
    if (!submatch(*m_catalog, index, start, text, groups.data(), count + 1)) return;
    if (rule.extract == Extract::single_group) {
        if (auto value = to_number({groups[1].data(), groups[1].size()}))
            add_metric(rule.metric, *value, when);
        return;
    }
    for (const auto& [name, at] : regex.NamedCapturingGroups()) {
        if (at > count) continue;
        const auto& piece = groups[static_cast<std::size_t>(at)];
        if (auto value = to_number({piece.data(), piece.size()})) add_metric(name, *value, when);
    }
}

std::string Watcher::tpverify_class_of(int index, std::string_view text, std::string& detail) const {
    const re2::RE2& regex = m_catalog->regex(index);
    std::array<re2::StringPiece, k_max_groups + 1> groups;
    const int count = std::min(regex.NumberOfCapturingGroups(), k_max_groups);
    if (!regex.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), re2::RE2::UNANCHORED,
                     groups.data(), count + 1))
        return m_catalog->rule(index).failure_class;
    const auto phase = group(regex, groups, "phase");
    const auto api = group(regex, groups, "api");
    const auto what = group(regex, groups, "what");
    if (phase.empty() && api.empty()) return m_catalog->rule(index).failure_class;
    detail =
        fmt::format("tpverify failed in {} at {}: {}", phase, api, what.substr(0, m_options.max_line_chars));
    return tpverify_failure_class(phase, api, what);
}

void Watcher::json_event(std::string_view text, TimePoint when) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos || text[first] != '{' ||
        text.find("\"event\"") == std::string_view::npos)
        return;
    const auto json = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object() || !json.contains("event") || !json["event"].is_string()) {
        warn("tpverify_event", text, when);
        return;
    }
    const auto event = json["event"].get<std::string>();
    if (event == "start") {
        m_last_progress = std::max(m_last_progress, when);
    } else if (event == "capture") {
        // json.value() would throw for a non-string "phase"; such an event is just not a phase.
        const auto found = json.find("phase");
        const std::string phase =
            found != json.end() && found->is_string() ? found->get<std::string>() : std::string();
        if (phase == "begin")
            effect(PhaseEffect::capture_begin, when);
        else if (phase == "end")
            effect(PhaseEffect::capture_end, when);
    } else if (event == "ready") {
        effect(PhaseEffect::ready, when);
    } else if (event == "result") {
        std::vector<std::pair<std::string, double>> numbers;
        numeric_fields(json, "", 1, numbers);
        for (const auto& [name, value] : numbers) add_metric(name, value, when);
        for (const auto& [name, value] : json.items())
            if (value.is_string() && name != "event" && m_result_text.size() < 64)
                m_result_text[name] = value.get<std::string>().substr(0, m_options.max_line_chars);
        effect(PhaseEffect::done, when);
    }
}

void Watcher::add_metric(const std::string& name, double value, TimePoint when) {
    auto& values = m_metrics[name];
    if (values.size() < k_max_values_per_metric) values.push_back(value);
    ++m_metric_values;
    if (m_state == WatchState::initializing || m_state == WatchState::capturing ||
        m_state == WatchState::ready)
        effect(PhaseEffect::measuring, when);
}

void Watcher::warn(const std::string& rule, std::string_view text, TimePoint when) {
    ++m_warning_count;
    const auto limit = m_options.max_line_chars;
    const auto key = warning_key(text).substr(0, limit);
    for (const auto& note : m_warnings)
        if (warning_key(note.line).substr(0, limit) == key) return;
    if (m_warnings.size() < k_max_warnings)
        m_warnings.push_back(WarningNote{rule, stored(text), since_start(when)});
}

std::string Watcher::describe(const Rule& rule, TimePoint when) const {
    return fmt::format("rule '{}' ({}) matched at {:.3f} s", rule.name, rule.failure_class,
                       since_start(when));
}

void Watcher::remember(std::string_view text) {
    if (m_ring.empty()) return;
    m_ring[m_ring_next].assign(text.substr(0, m_options.max_line_chars));
    m_ring_next = (m_ring_next + 1) % m_ring.size();
    m_ring_count = std::min(m_ring_count + 1, m_ring.size());
}

std::vector<std::string> Watcher::last_lines() const {
    std::vector<std::string> lines;
    lines.reserve(m_ring_count);
    const std::size_t first =
        (m_ring_next + m_ring.size() - m_ring_count) % std::max<std::size_t>(m_ring.size(), 1);
    for (std::size_t i = 0; i < m_ring_count; ++i) lines.push_back(m_ring[(first + i) % m_ring.size()]);
    return lines;
}

std::string Watcher::stored(std::string_view text) const {
    if (text.size() <= m_options.max_line_chars) return std::string(text);
    return fmt::format("{} ... [{} more bytes]", text.substr(0, m_options.max_line_chars),
                       text.size() - m_options.max_line_chars);
}

std::string Diagnosis::headline(std::size_t max_chars) const {
    if (failure_class.empty()) return {};
    std::string out =
        phase.empty() ? fmt::format("{}: {}", failure_class, cause.empty() ? detail : cause)
                      : fmt::format("{} while {}: {}", failure_class, phase, cause.empty() ? detail : cause);
    if (out.size() > max_chars) {
        out.erase(max_chars > 3 ? max_chars - 3 : 0);
        out += "...";
    }
    return out;
}

std::string Diagnosis::text() const {
    if (failure_class.empty()) return {};
    std::string out = headline(k_max_diagnosis_chars / 4) + "\n";
    if (detail != cause) out += fmt::format("  {}\n", detail);
    if (!before.empty()) out += "--- before ---\n";
    for (const auto& l : before) out += fmt::format("  {}\n", l);
    if (!trigger_line.empty()) out += fmt::format("> {}\n", trigger_line);
    if (!after.empty()) out += "--- after ---\n";
    for (const auto& l : after) out += fmt::format("{} {}\n", l == line ? '>' : ' ', l);
    if (out.size() > k_max_diagnosis_chars) {
        out.erase(k_max_diagnosis_chars);
        out += "\n... (cut)\n";
    }
    return out;
}

std::string_view to_string(WatchState state) {
    switch (state) {
        case WatchState::initializing:
            return "initializing";
        case WatchState::capturing:
            return "capturing";
        case WatchState::ready:
            return "ready";
        case WatchState::measuring:
            return "measuring";
        case WatchState::done:
            return "done";
        case WatchState::failed:
            return "failed";
        case WatchState::timed_out:
            return "timed_out";
    }
    return "?";
}

std::string_view to_string(TimeoutKind kind) {
    switch (kind) {
        case TimeoutKind::none:
            return "none";
        case TimeoutKind::startup:
            return "startup";
        case TimeoutKind::capture:
            return "capture";
        case TimeoutKind::stall:
            return "stall";
        case TimeoutKind::total:
            return "total";
    }
    return "?";
}

}  // namespace ncclsweep::inline watch
