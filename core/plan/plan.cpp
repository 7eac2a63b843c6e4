#include "core/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/spec/spec_parser.hpp"

namespace ncclsweep::inline plan {
namespace {

/// Stands for "(N bytes" while a warning is grouped across message sizes.
constexpr const char* k_size_mark = "(\x1fSIZE bytes";

std::optional<std::uint64_t> parse_count(const std::string& text) {
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value == 0) return std::nullopt;
    return value;
}

const std::string* find_param(const std::vector<Assignment>& list, std::string_view name) {
    for (const auto& [key, value] : list)
        if (key == name) return &value;
    return nullptr;
}

std::string show_params(const Experiment& experiment) {
    std::string out;
    for (const auto& [name, value] : experiment.params)
        out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value);
    return out.empty() ? "no axes" : out;
}

/// Where a combination finding points: the experiment's value of that axis, else the fixed env value.
SourceMark mark_for(const Spec& spec, const Experiment& experiment, const std::string& variable) {
    for (const auto& axis : spec.axes) {
        if (axis.name != variable) continue;
        if (const std::string* value = find_param(experiment.params, variable))
            for (const auto& v : axis.values)
                if (v.text == *value) return v.mark;
        return axis.mark;
    }
    for (const auto& [name, value] : spec.env)
        if (name == variable) return value.mark;
    for (const auto& point : spec.include)
        for (const auto& [name, value] : point.values)
            if (name == variable && find_param(experiment.params, name)) return value.mark;
    return SourceMark{spec.path, 0, 0};
}

}  // namespace

void IdRanges::add(int id) {
    if (!m_ranges.empty() && m_ranges.back().second >= id) return;  // already there
    ++m_count;
    if (!m_ranges.empty() && m_ranges.back().second + 1 == id) {
        m_ranges.back().second = id;
        return;
    }
    m_ranges.emplace_back(id, id);
}

bool IdRanges::contains(int id) const {
    auto it = std::upper_bound(m_ranges.begin(), m_ranges.end(),
                               std::make_pair(id, std::numeric_limits<int>::max()));
    return it != m_ranges.begin() && std::prev(it)->second >= id;
}

std::string IdRanges::to_string() const {
    std::string out;
    for (const auto& [first, last] : m_ranges) {
        if (!out.empty()) out.push_back(',');
        out += first == last ? std::to_string(first) : fmt::format("{}-{}", first, last);
    }
    return out;
}

std::string IdRanges::to_text(std::size_t max_ranges) const {
    std::string out;
    const std::size_t shown = std::min(max_ranges, m_ranges.size());
    for (std::size_t i = 0; i < shown; ++i) {
        const auto [first, last] = m_ranges[i];
        if (!out.empty()) out += ", ";
        out += first == last ? std::to_string(first) : fmt::format("{}-{}", first, last);
    }
    if (shown < m_ranges.size())
        out += fmt::format(" and {} more range{}", m_ranges.size() - shown,
                           m_ranges.size() - shown == 1 ? "" : "s");
    return out;
}

int PlanSummary::warnings_for(int id) const {
    return static_cast<int>(std::count_if(warnings.begin(), warnings.end(), [&](const WarningGroup& group) {
        return group.experiments.contains(id);
    }));
}

Result<Spec> prepare_spec(const std::string& path, const std::vector<Override>& overrides) {
    auto spec = load_spec(path);
    if (!spec) return spec.error();
    if (auto ok = apply_overrides(*spec, overrides); !ok) return ok.error();
    if (auto ok = validate_spec(*spec); !ok) return ok.error();
    return spec;
}

nccl::WorkloadContext workload_context(const Spec& spec, const Experiment& experiment) {
    nccl::WorkloadContext context;
    bool engine = spec.workload.engine == "tpverify";
    const std::string* tokens = find_param(experiment.workload, "tokens");
    const std::string* hidden = find_param(experiment.workload, "hidden");
    const std::string* model = find_param(experiment.workload, "model");
    // 0 = unknown (plain integers: GCC 12 warns maybe-uninitialized on optionals here at -O2).
    std::uint64_t token_count = tokens ? parse_count(*tokens).value_or(0) : engine ? 4 : 0;
    std::uint64_t hidden_size = hidden ? parse_count(*hidden).value_or(0) : 0;
    if (!hidden) {
        std::string preset = model ? *model : engine ? "kimi-k2.5" : "";
        if (preset == "kimi-k2.5" || preset == "deepseek-v3") hidden_size = 7168;
        if (preset == "llama-70b") hidden_size = 8192;
    }
    if (token_count > 0 && hidden_size > 0) context.max_message_bytes = token_count * hidden_size * 2;
    if (const std::string* topology = find_param(experiment.workload, "topology"))
        context.topology = *topology;
    return context;
}

std::vector<std::string> inert_settings(const Spec& spec, const Experiment& experiment) {
    std::vector<std::string> out;
    for (const auto& finding : nccl::check_environment(experiment.env, workload_context(spec, experiment)))
        if ((finding.code == "ignored-small" || finding.code == "buffsize-unused") &&
            !finding.variable.empty())
            out.push_back(finding.variable);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

Result<PlanSummary> check_plan(const Spec& spec, const PlanOptions& options,
                               const std::function<void(const Experiment&)>& each) {
    auto planner = Planner::create(spec, options);
    if (!planner) return planner.error();
    PlanSummary summary;
    std::map<std::pair<std::string, std::string>, std::size_t> group_index;
    std::vector<std::set<std::uint64_t>> sizes;  // per warning group: the message sizes it was found at
    // Many experiments share one environment + context: check each distinct one once.
    std::unordered_map<std::string, std::vector<nccl::Finding>> cache;
    Experiment experiment;
    std::string cache_key;
    while (true) {
        auto more = planner->next(experiment);
        if (!more) return more.error();
        if (!*more) break;
        ++summary.count;
        if (experiment.defaults) summary.defaults.add(experiment.id);
        nccl::WorkloadContext context = workload_context(spec, experiment);
        cache_key.assign(std::to_string(context.max_message_bytes.value_or(0)));
        cache_key.append("|").append(context.topology.value_or("")).append("|");
        for (const auto& [name, value] : experiment.env)
            cache_key.append(name).append("=").append(value).append("\x1f");
        if (cache.size() > 4096) cache.clear();
        auto found = cache.find(cache_key);
        if (found == cache.end())
            found = cache.emplace(cache_key, nccl::check_environment(experiment.env, context)).first;
        for (const auto& finding : found->second) {
            if (finding.severity == nccl::Severity::error)
                return Error::bad_input(
                    fmt::format("{}: experiment {} ({}): {}; change the values or exclude this "
                                "combination",
                                mark_for(spec, experiment, finding.variable).to_string(), experiment.id,
                                show_params(experiment), finding.message));
            // A finding that names the message size is one warning over every size it appears at.
            const std::string size_text = fmt::format("({} bytes", context.max_message_bytes.value_or(0));
            std::string message = finding.message;
            const auto at = context.max_message_bytes ? message.find(size_text) : std::string::npos;
            if (at != std::string::npos) message.replace(at, size_text.size(), k_size_mark);
            auto key = std::make_pair(finding.code, message);
            auto [it, added] = group_index.emplace(key, summary.warnings.size());
            if (added) {
                summary.warnings.push_back(WarningGroup{finding.code, message, {}});
                sizes.emplace_back();
            }
            summary.warnings[it->second].experiments.add(experiment.id);
            if (at != std::string::npos) sizes[it->second].insert(*context.max_message_bytes);
        }
        if (each) each(experiment);
    }
    for (std::size_t i = 0; i < summary.warnings.size(); ++i) {
        std::string& message = summary.warnings[i].message;
        const auto at = message.find(k_size_mark);
        if (at == std::string::npos || sizes[i].empty()) continue;
        const auto low = *sizes[i].begin(), high = *sizes[i].rbegin();
        message.replace(at, std::string_view(k_size_mark).size(),
                        low == high ? fmt::format("({} bytes", low) : fmt::format("({}-{} bytes", low, high));
    }
    if (summary.count == 0)
        return Error::bad_input(
            fmt::format("{}: every point of the sweep is excluded; loosen `exclude:` or add "
                        "`include:` points",
                        spec.path));
    return summary;
}

}  // namespace ncclsweep::inline plan
