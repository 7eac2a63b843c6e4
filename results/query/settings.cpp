// Settings that count: NCCL's own choice, inert, or a change (results/query/settings.hpp).
#include "results/query/settings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include "core/nccl/nccl_detail.hpp"
#include "core/plan/baseline.hpp"
#include "results/query/query.hpp"

namespace ncclsweep::results {
namespace {

namespace nd = ::ncclsweep::nccl::detail;

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool parse_int(std::string_view text, int& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
}

/// One stored entry "AllReduce 57344B: RING/LL ch0..0 t256"; nullopt when it is not one.
std::optional<CollectiveChoice> parse_entry(std::string_view entry) {
    const auto space = entry.find(' ');
    const auto colon = entry.find(": ");
    if (space == std::string_view::npos || colon == std::string_view::npos || colon < space)
        return std::nullopt;
    CollectiveChoice c;
    c.collective = lower(entry.substr(0, space));
    std::string_view bytes = entry.substr(space + 1, colon - space - 1);
    if (bytes.empty() || bytes.back() != 'B') return std::nullopt;
    bytes.remove_suffix(1);
    if (std::from_chars(bytes.data(), bytes.data() + bytes.size(), c.bytes).ec != std::errc())
        return std::nullopt;
    std::string_view rest = entry.substr(colon + 2);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    c.algo = lower(rest.substr(0, slash));
    rest = rest.substr(slash + 1);
    const auto end = rest.find(' ');
    c.proto = lower(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    while (!rest.empty()) {
        const auto next = rest.find(' ');
        const std::string_view word = rest.substr(0, next);
        rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
        int a = 0, b = 0;
        if (word.rfind("ch", 0) == 0) {
            const auto dots = word.find("..");
            if (dots != std::string_view::npos && parse_int(word.substr(2, dots - 2), a) &&
                parse_int(word.substr(dots + 2), b) && b >= a)
                c.channels = b - a + 1;
        } else if (word.rfind("nch", 0) == 0 && parse_int(word.substr(3), a)) {
            c.channels = a;
        } else if (word.rfind("t", 0) == 0 && parse_int(word.substr(1), a)) {
            c.threads = a;
        }
    }
    return c;
}

const std::vector<std::string_view>& algorithms() {
    static const std::vector<std::string_view> list(nd::k_algorithms.begin(), nd::k_algorithms.end());
    return list;
}

const std::vector<std::string_view>& protocols() {
    static const std::vector<std::string_view> list(nd::k_protocols.begin(), nd::k_protocols.end());
    return list;
}

/// How NCCL spells a protocol in its own messages (LL, LL128, Simple).
std::string protocol_name(std::string_view token) {
    if (token == "simple") return "Simple";
    std::string out(token);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::optional<std::size_t> collective_index(std::string_view collective) {
    for (std::size_t f = 0; f < nd::k_collectives.size(); ++f)
        if (nd::k_collectives[f] == collective) return f;
    return std::nullopt;
}

/// NCCL's choice at the defaults point for `collective`, when it reported one.
const CollectiveChoice* choice_for(const std::vector<CollectiveChoice>& choices,
                                   std::string_view collective) {
    for (const auto& c : choices)
        if (c.collective == collective) return &c;
    return nullptr;
}

std::string list_text(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
}

struct Context {
    const SweepTable& table;
    const ExperimentRow& row;
    const MetricChoice& metric;
    std::vector<CollectiveChoice> own;       ///< the point's own choices
    std::vector<CollectiveChoice> defaults;  ///< NCCL's choices at its defaults (same workload)
    bool has_defaults = false;
};

/// NCCL_ALGO / NCCL_PROTO: per measured collective, whether the value leaves NCCL's own choice
/// possible; a change is deployed scoped to the collectives it changed.
void judge_list(const Context& ctx, SettingJudgement& s, bool algo, std::vector<std::string>& notes) {
    std::string reason;
    const auto& elements = algo ? algorithms() : protocols();
    auto parsed = nd::parse_list(s.value, elements, reason);
    if (!parsed) {
        s.why = fmt::format("NCCL cannot parse it ({}); deployed as written", reason);
        s.deploy_value = s.value;
        return;
    }
    // The collectives the sweep measured: what NCCL reported for this point (else at its defaults).
    const auto& measured = !ctx.own.empty() ? ctx.own : ctx.defaults;
    if (measured.empty()) {
        s.why =
            "NCCL's TUNING lines were not recorded, so which collectives it changed is unknown; deployed as "
            "written, for every collective";
        s.deploy_value = s.value;
        return;
    }
    std::vector<std::string> changed_entries, changed_names, unchanged_names;
    std::set<std::string> seen;
    for (const auto& c : measured) {
        if (!seen.insert(c.collective).second) continue;
        auto f = collective_index(c.collective);
        if (!f || !parsed->covered[*f]) continue;
        std::vector<std::string> allowed;
        bool allows_default = false;
        const CollectiveChoice* d = ctx.has_defaults ? choice_for(ctx.defaults, c.collective) : nullptr;
        for (std::size_t e = 0; e < elements.size(); ++e) {
            if (!parsed->enabled[*f][e]) continue;
            allowed.push_back(algo ? std::string(elements[e]) : protocol_name(elements[e]));
            if (d && (algo ? d->algo : d->proto) == elements[e]) allows_default = true;
        }
        if (allows_default) {
            unchanged_names.push_back(c.collective);
            continue;
        }
        changed_names.push_back(c.collective);
        std::string joined;
        for (const auto& a : allowed) joined += (joined.empty() ? "" : ",") + a;
        changed_entries.push_back(c.collective + ":" + joined);
    }
    if (changed_entries.empty()) {
        s.role = SettingRole::nccl_choice;
        s.why = unchanged_names.empty()
                    ? "it covers no collective the workload ran; left to NCCL"
                    : fmt::format("NCCL chooses this itself for {} at its defaults; left to NCCL",
                                  list_text(unchanged_names));
        return;
    }
    std::string value;
    for (const auto& entry : changed_entries) value += (value.empty() ? "" : ";") + entry;
    s.deploy_value = value;
    s.collectives = changed_names;
    s.why = fmt::format("changes NCCL's choice for {}", list_text(changed_names));
    if (lower(value) != lower(s.value))
        notes.push_back(
            fmt::format("{}={} is deployed as {}={}: scoped to the collective{} it changed ({}), "
                        "at every message size of {}; --format tuner-profile pins it to the "
                        "measured sizes",
                        s.name, s.value, s.name, value, changed_names.size() == 1 ? "" : "s",
                        list_text(changed_names), changed_names.size() == 1 ? "it" : "them"));
}

/// Channel bounds and thread counts: unchanged when NCCL's own choice at its defaults already
/// satisfies them for every measured collective.
void judge_count(const Context& ctx, SettingJudgement& s) {
    s.deploy_value = s.value;
    int n = 0;
    if (!ctx.has_defaults || ctx.defaults.empty() || !parse_int(s.value, n)) return;
    const bool is_min = s.name.find("MIN_") != std::string::npos;
    const bool threads = s.name == "NCCL_NTHREADS";
    std::vector<std::string> changed;
    for (const auto& d : ctx.defaults) {
        const int have = threads ? d.threads : d.channels;
        if (have < 0) {
            // Not reported at the defaults: which collectives it changes shows only in the point's
            // own choices, compared with the defaults'.
            changed.clear();
            for (const auto& own : ctx.own)
                if (const CollectiveChoice* at_defaults = choice_for(ctx.defaults, own.collective);
                    !at_defaults || !(*at_defaults == own))
                    changed.push_back(own.collective);
            s.collectives = changed;
            return;
        }
        if (threads ? have != n : (is_min ? have < n : have > n)) changed.push_back(d.collective);
    }
    if (!changed.empty()) {
        s.collectives = changed;
        s.why = fmt::format("changes NCCL's {} for {}", threads ? "threads" : "channel count",
                            list_text(changed));
        return;
    }
    s.role = SettingRole::nccl_choice;
    s.why = threads
                ? "NCCL runs this many threads by itself at its defaults; left to NCCL"
                : fmt::format("NCCL's own channel counts at its defaults already satisfy it; left to NCCL");
}

/// The parameters zipped with `name` in the sweep's spec ({name} when none).
std::vector<std::string> group_of(const SweepTable& table, const std::string& name) {
    for (const auto& group : table.zip)
        if (std::find(group.begin(), group.end(), name) != group.end()) return group;
    return {name};
}

/// Inert: every ok point that differs from `row` only in `name`'s group shows the same effective
/// choice and no significant difference in the metric; at least one such point ran.
std::optional<std::string> inert_evidence(const Context& ctx, const std::string& name) {
    if (ctx.own.empty()) return std::nullopt;
    const MetricSummary* mine = ctx.row.metric(ctx.metric.name);
    if (!mine || mine->values.empty()) return std::nullopt;
    const auto group = group_of(ctx.table, name);
    auto in_group = [&](const std::string& n) {
        return std::find(group.begin(), group.end(), n) != group.end();
    };
    std::vector<std::string> ids;
    for (const auto& other : ctx.table.rows) {
        if (other.exp_id == ctx.row.exp_id || other.params.size() != ctx.row.params.size()) continue;
        bool sibling = true, differs = false;
        for (const auto& [n, v] : ctx.row.params) {
            auto it = std::find_if(other.params.begin(), other.params.end(),
                                   [&](const Assignment& a) { return a.first == n; });
            if (it == other.params.end()) {
                sibling = false;
                break;
            }
            if (it->second == v) continue;
            if (!in_group(n)) {
                sibling = false;
                break;
            }
            differs = true;
        }
        if (!sibling || !differs || other.status != ExperimentStatus::ok) continue;
        const MetricSummary* theirs = other.metric(ctx.metric.name);
        if (!theirs || theirs->values.empty()) continue;
        if (collective_choices(other.effective_nccl) != ctx.own) return std::nullopt;
        if (!indistinguishable(*theirs, *mine, ctx.metric, k_default_alpha, k_default_threshold))
            return std::nullopt;
        ids.push_back(std::to_string(other.exp_id));
    }
    if (ids.empty()) return std::nullopt;
    return fmt::format(
        "inert: experiment{} {} (other values of it) show the same effective NCCL choice and no "
        "significant difference in {}",
        ids.size() == 1 ? "" : "s", list_text(ids), ctx.metric.name);
}

}  // namespace

std::vector<CollectiveChoice> collective_choices(std::string_view effective_nccl) {
    std::vector<CollectiveChoice> out;
    std::size_t start = 0;
    while (start < effective_nccl.size()) {
        auto end = effective_nccl.find("; ", start);
        std::string_view entry = effective_nccl.substr(
            start, end == std::string_view::npos ? std::string_view::npos : end - start);
        if (entry.rfind("env:", 0) == 0 || entry.rfind("tuner:", 0) == 0) break;
        if (auto choice = parse_entry(entry)) out.push_back(std::move(*choice));
        if (end == std::string_view::npos) break;
        start = end + 2;
    }
    return out;
}

std::string_view role_text(SettingRole role) {
    switch (role) {
        case SettingRole::change:
            return "change";
        case SettingRole::nccl_choice:
            return "NCCL's own choice";
        case SettingRole::inert:
            return "inert";
    }
    return "change";
}

int PointSettings::changed() const {
    return static_cast<int>(std::count_if(settings.begin(), settings.end(), [](const SettingJudgement& s) {
        return s.role == SettingRole::change;
    }));
}

std::vector<std::string> PointSettings::names(SettingRole role) const {
    std::vector<std::string> out;
    for (const auto& s : settings)
        if (s.role == role) out.push_back(s.name);
    return out;
}

std::optional<std::vector<TunerChoice>> tuner_choices(std::string_view effective_nccl,
                                                      const PointSettings& settings) {
    const auto own = collective_choices(effective_nccl);
    if (own.empty()) return std::nullopt;
    std::set<std::string> touched, channel_touched;
    for (const auto& s : settings.settings) {
        if (s.role != SettingRole::change) continue;
        const bool list = s.name == "NCCL_ALGO" || s.name == "NCCL_PROTO";
        const bool count = s.name.find("NCHANNELS") != std::string::npos ||
                           s.name.find("CTAS") != std::string::npos || s.name == "NCCL_NTHREADS";
        if (!list && !count) continue;  // not a tuner's business (buffer sizes, P2P level, ...)
        if (s.collectives.empty()) return std::nullopt;
        for (const auto& c : s.collectives) {
            touched.insert(c);
            if (count) channel_touched.insert(c);
        }
    }
    std::vector<TunerChoice> out;
    std::set<std::string> seen;
    for (const auto& c : own) {
        if (!touched.count(c.collective) || !seen.insert(c.collective).second) continue;
        out.push_back(TunerChoice{c.collective, c.algo, c.proto,
                                  channel_touched.count(c.collective) && c.channels > 0 ? c.channels : 0});
    }
    return out;
}

const ExperimentRow* defaults_row_for(const SweepTable& table, const ExperimentRow& row) {
    std::vector<Assignment> others;
    for (const auto& a : row.params)
        if (!is_nccl_variable(a.first)) others.push_back(a);
    for (const auto& candidate : table.rows)
        if (candidate.defaults && candidate.params == others) return &candidate;
    return nullptr;
}

PointSettings judge_settings(const SweepTable& table, const ExperimentRow& row, const MetricChoice& metric) {
    PointSettings out;
    Context ctx{table, row, metric, collective_choices(row.effective_nccl), {}, false};
    const ExperimentRow* defaults = defaults_row_for(table, row);
    if (defaults) {
        out.defaults_id = defaults->exp_id;
        ctx.defaults = collective_choices(defaults->effective_nccl);
        ctx.has_defaults = defaults->status == ExperimentStatus::ok && !ctx.defaults.empty();
    }
    for (const auto& [name, value] : row.params) {
        if (name.empty() || !std::isupper(static_cast<unsigned char>(name[0])))
            continue;  // workload parameter
        if (value.empty() || value == "unset") continue;
        SettingJudgement s;
        s.name = name;
        s.value = value;
        s.deploy_value = value;
        s.why = "changes what NCCL does here (or nothing recorded says it does not)";
        if (name == "NCCL_ALGO" || name == "NCCL_PROTO")
            judge_list(ctx, s, name == "NCCL_ALGO", out.notes);
        else if (name.find("NCHANNELS") != std::string::npos || name.find("CTAS") != std::string::npos ||
                 name == "NCCL_NTHREADS")
            judge_count(ctx, s);
        if (s.role == SettingRole::nccl_choice && defaults)
            s.why = fmt::format("{} (NCCL's defaults: experiment {})", s.why, defaults->exp_id);
        if (s.role == SettingRole::change)
            if (auto evidence = inert_evidence(ctx, name)) {
                s.role = SettingRole::inert;
                s.why = *evidence;
            }
        out.settings.push_back(std::move(s));
    }
    if (!defaults && table.rows.end() != std::find_if(table.rows.begin(), table.rows.end(),
                                                      [](const ExperimentRow& r) { return r.defaults; }))
        out.notes.push_back(
            "no defaults point with the same workload parameters: NCCL's own choice is unknown here");
    return out;
}

}  // namespace ncclsweep::results
