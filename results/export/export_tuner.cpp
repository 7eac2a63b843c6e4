// The profile read by our tuner plugin, libnccl-tuner-ncclsweep.so (tuner/profile.h,
// docs/export.md): per collective and per message size the sweep measured, the winning
// algorithm/protocol, and a channel count only where the sweep varied and measured channels.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/nccl/nccl_detail.hpp"
#include "results/export/exports.hpp"

namespace ncclsweep::results::exports {
namespace {

namespace nd = ::ncclsweep::nccl::detail;

constexpr const char* k_channel_variables[] = {"NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS", "NCCL_MAX_CTAS",
                                               "NCCL_MAX_NCHANNELS"};

std::optional<std::string> env_of(const StoredExperiment& experiment, std::string_view name) {
    std::optional<std::string> value;
    for (const auto& [n, v] : experiment.experiment.env)
        if (n == name) value = v;
    return value;
}

/// The point's NCCL variables that no profile rule carries (all but the algorithm, protocol and
/// channel ones), as NAME=value.
std::vector<std::string> outside_profile(const StoredExperiment& experiment) {
    std::vector<std::string> rest;
    for (const auto& [name, value] : experiment.experiment.env)
        if (name.rfind("NCCL_", 0) == 0 && name != "NCCL_ALGO" && name != "NCCL_PROTO" &&
            std::find(std::begin(k_channel_variables), std::end(k_channel_variables), name) ==
                std::end(k_channel_variables))
            rest.push_back(name + "=" + value);
    return rest;
}

/// One line of text for a '#' comment: control bytes visible, nothing that starts a new line.
std::string profile_comment(std::string_view text) {
    return "# " + clean_text(text, false) + "\n";
}

/// Whether any channel variable takes more than one value (set or unset counts) over the sweep.
bool sweep_varies_channels(const SweepData& sweep) {
    for (const char* name : k_channel_variables) {
        std::set<std::optional<std::string>> values;
        for (const auto& experiment : sweep.experiments) values.insert(env_of(experiment, name));
        if (values.size() > 1) return true;
    }
    return false;
}

/// The exact channel count the point pins (equal MIN and MAX; the more restrictive of the two
/// names wins, as in NCCL), nullopt otherwise.
std::optional<int> pinned_channels(const StoredExperiment& experiment) {
    std::optional<std::int64_t> low, high;
    for (const char* name : k_channel_variables) {
        auto value = env_of(experiment, name);
        auto number = value ? nd::parse_integer(*value) : std::nullopt;
        if (!number) continue;
        const bool is_min = std::string_view(name).find("MIN") != std::string_view::npos;
        auto& slot = is_min ? low : high;
        slot = slot ? (is_min ? std::max(*slot, *number) : std::min(*slot, *number)) : *number;
    }
    if (low && high && *low == *high && *low >= 1 && *low <= 64) return static_cast<int>(*low);
    return std::nullopt;
}

/// The one element a parsed NCCL_ALGO/NCCL_PROTO leaves for collective f: its index; -1 when
/// the value does not cover f (NCCL's own choice); -2 when it allows several.
int single_element(const std::optional<nd::ParsedList>& parsed, std::size_t f) {
    if (!parsed || !parsed->covered[f]) return -1;
    int found = -1;
    for (std::size_t e = 0; e < parsed->enabled[f].size(); ++e)
        if (parsed->enabled[f][e]) {
            if (found != -1) return -2;
            found = static_cast<int>(e);
        }
    return found == -1 ? -2 : found;
}

/// A point chosen for the profile with the message sizes its workload ran.
struct Point {
    const StoredExperiment* experiment;
    MessageSizes sizes;
    const PointSettings* settings = nullptr;  ///< judged settings: rules from the effective choice
};

/// The rules of a point from its own effective choices (results/query tuner_choices).
void add_choices(const Point& point, const std::vector<TunerChoice>& choices,
                 std::map<std::tuple<std::string, std::uint64_t, int>, std::string>& seen, std::string& out,
                 int& rules) {
    for (std::string_view collective : {"allreduce", "allgather"}) {
        const bool gather = collective == "allgather";
        if (gather && !point.sizes.allgather_max) continue;
        const std::uint64_t bytes = gather ? *point.sizes.allgather_max : point.sizes.allreduce_bytes;
        auto choice = std::find_if(choices.begin(), choices.end(),
                                   [&](const TunerChoice& c) { return c.collective == collective; });
        if (choice == choices.end()) {
            out += comment(
                fmt::format("{} {} bytes: no deployed setting changed it; left to NCCL", collective, bytes));
            continue;
        }
        const std::string proto = choice->proto == "simple" ? "simple" : choice->proto;
        std::string rule = fmt::format("{} {} {} {} 1 {} {} {}\n", collective, bytes, bytes,
                                       point.sizes.ranks, choice->algo, proto, choice->channels);
        auto key = std::make_tuple(std::string(collective), bytes, point.sizes.ranks);
        if (auto it = seen.find(key); it != seen.end()) {
            if (it->second != rule)
                out += comment(fmt::format("{} {} bytes: an earlier point already set this size ({})",
                                           collective, bytes, it->second.substr(0, it->second.size() - 1)));
            continue;
        }
        out += comment(fmt::format(
            "{} {} bytes: the point's own effective choice, {}/{}{}", collective, bytes, choice->algo, proto,
            choice->channels > 0
                ? fmt::format(" on {} channel{}", choice->channels, choice->channels == 1 ? "" : "s")
                : std::string(", channels NCCL's own")));
        seen.emplace(key, rule);
        out += rule;
        ++rules;
    }
}

/// Appends the rules (and '#' notes) of one point to `out`; `seen` keeps the first rule per
/// collective, size and rank count so a later point cannot contradict an earlier one.
Result<void> add_point(const Point& point, bool channels_varied, std::string_view metric,
                       std::map<std::tuple<std::string, std::uint64_t, int>, std::string>& seen,
                       std::string& out, int& rules) {
    const StoredExperiment& experiment = *point.experiment;
    const int id = experiment.experiment.id;
    const std::vector<std::string_view> algos(nd::k_algorithms.begin(), nd::k_algorithms.end());
    const std::vector<std::string_view> protos(nd::k_protocols.begin(), nd::k_protocols.end());
    std::optional<nd::ParsedList> algo_list, proto_list;
    std::string reason;
    for (auto [name, elements, list] :
         {std::tuple{"NCCL_ALGO", &algos, &algo_list}, std::tuple{"NCCL_PROTO", &protos, &proto_list}}) {
        auto value = env_of(experiment, name);
        if (!value || value->empty()) continue;
        *list = nd::parse_list(*value, *elements, reason);
        if (!*list)
            return Error::bad_input(
                fmt::format("experiment {}: {}={}: {}; NCCL would refuse it too, so it cannot be a winner "
                            "worth deploying",
                            id, name, clean_text(*value, false), reason));
    }
    std::string header =
        fmt::format("experiment {} (key {}): {}", id, experiment.experiment.key, params_label(experiment));
    if (auto stats = metric_stats(experiment, metric))
        header += fmt::format("; {} median {}", metric, format_number(stats->median));
    if (!experiment.outcome.collective_times.empty())  // what the engine's times rest on
        header += "; collective times " + experiment.outcome.collective_times;
    out += "\n" + profile_comment(header);

    if (point.settings) {
        if (auto choices = tuner_choices(experiment.outcome.effective_nccl, *point.settings)) {
            add_choices(point, *choices, seen, out, rules);
            if (const auto rest = outside_profile(experiment); !rest.empty())
                out += comment(fmt::format("not part of a profile (deploy them with --format env): {}",
                                           fmt::join(rest, " ")));
            return {};
        }
    }
    int channels = 0;
    if (channels_varied) {
        if (auto pinned = pinned_channels(experiment))
            channels = *pinned;
        else
            out += profile_comment(
                "the sweep varied channels, but this point pins no exact count (equal MIN and MAX): "
                "channels left to NCCL");
    }
    for (std::string_view collective : {"allreduce", "allgather"}) {
        const bool gather = collective == "allgather";
        if (gather && !point.sizes.allgather_max) continue;
        const std::uint64_t bytes = gather ? *point.sizes.allgather_max : point.sizes.allreduce_bytes;
        const auto f = static_cast<std::size_t>(
            std::find(nd::k_collectives.begin(), nd::k_collectives.end(), collective) -
            nd::k_collectives.begin());
        const int algo = single_element(algo_list, f);
        const int proto = single_element(proto_list, f);
        auto note = [&](std::string_view why) {
            out += profile_comment(fmt::format("{} {} bytes: {}; left to NCCL", collective, bytes, why));
        };
        if (algo == -1 && proto == -1) {
            note("the point sets neither algorithm nor protocol, NCCL's own choice won");
            continue;
        }
        if (algo == -2 || proto == -2) {
            note(fmt::format("the point allows several {}, a profile names exactly one",
                             algo == -2 ? "algorithms" : "protocols"));
            continue;
        }
        if (algo == -1 || proto == -1) {
            note(fmt::format("the point forces only the {} ({}), a profile names both",
                             algo == -1 ? "protocol" : "algorithm",
                             algo == -1 ? protos[static_cast<std::size_t>(proto)]
                                        : algos[static_cast<std::size_t>(algo)]));
            continue;
        }
        if (!nd::algo_proto_exists(static_cast<std::size_t>(algo), static_cast<std::size_t>(proto), f)) {
            note(fmt::format("NCCL has no {}/{} for it", algos[static_cast<std::size_t>(algo)],
                             protos[static_cast<std::size_t>(proto)]));
            continue;
        }
        std::string rule = fmt::format("{} {} {} {} 1 {} {} {}\n", collective, bytes, bytes,
                                       point.sizes.ranks, algos[static_cast<std::size_t>(algo)],
                                       protos[static_cast<std::size_t>(proto)], channels);
        auto key = std::make_tuple(std::string(collective), bytes, point.sizes.ranks);
        if (auto it = seen.find(key); it != seen.end()) {
            if (it->second != rule)
                note(fmt::format("an earlier point already set this size ({})",
                                 it->second.substr(0, it->second.size() - 1)));
            continue;
        }
        seen.emplace(key, rule);
        out += rule;
        ++rules;
    }
    if (const auto rest = outside_profile(experiment); !rest.empty())
        out += profile_comment(
            fmt::format("not part of a profile (deploy them with --format env if they matter): {}",
                        fmt::join(rest, " ")));
    return {};
}

Result<std::string> profile_of(const SweepData& sweep, const std::vector<Point>& points,
                               std::string_view metric, std::string_view chosen_by) {
    const bool channels_varied = sweep_varies_channels(sweep);
    std::string out =
        profile_comment("ncclsweep tuner profile for libnccl-tuner-ncclsweep.so (NCCLSWEEP_TUNER_PROFILE)");
    out += "ncclsweep-tuner-profile 1\n";
    out +=
        profile_comment(fmt::format("sweep {} '{}', {}", sweep.info.id, sweep.info.record.name, chosen_by));
    out += profile_comment(
        "sizes are the bytes NCCL passes to the tuner: all-reduce tokens x hidden x 2, all-gather of "
        "the logits tokens x vocab/tp x 2 x tp");
    out += profile_comment(channels_varied
                               ? "channels: the sweep varied them, so a pinned count is kept (0 = NCCL's own)"
                               : "channels: 0 = NCCL's own (the sweep did not vary them)");
    out += profile_comment("collective min_bytes max_bytes nranks nnodes algorithm protocol channels");
    std::map<std::tuple<std::string, std::uint64_t, int>, std::string> seen;
    int rules = 0;
    for (const auto& point : points) {
        auto added = add_point(point, channels_varied, metric, seen, out, rules);
        if (!added) return added.error();
    }
    if (rules == 0)
        out += "\n" + profile_comment("no rules: every collective is NCCL's own choice, as in the winner");
    return out;
}

}  // namespace

Result<std::string> to_tuner_profile(const SweepData& sweep, const StoredExperiment& experiment,
                                     std::string_view metric, const PointSettings* settings) {
    auto sizes = message_sizes(experiment);
    if (!sizes) return sizes.error();
    return profile_of(sweep, {Point{&experiment, *sizes, settings}}, metric,
                      fmt::format("experiment {} as chosen with --experiment", experiment.experiment.id));
}

Result<std::string> to_tuner_profile_best(const SweepData& sweep, std::string_view metric) {
    // One group per workload size (rank count, all-reduce bytes, all-gather bytes); in each,
    // the point `results best` would recommend among that group's experiments (the one best
    // rule: best median, tie group by diff's test and threshold, simplest point of the group).
    using Key = std::tuple<int, std::uint64_t, std::uint64_t>;
    std::map<Key, SweepData> groups;
    std::map<Key, MessageSizes> sizes_of;
    std::optional<Error> size_error;
    for (const auto& experiment : sweep.experiments) {
        if (experiment.outcome.status != ExperimentStatus::ok) continue;
        auto sizes = message_sizes(experiment);
        if (!sizes) {
            if (!size_error) size_error = sizes.error();
            continue;
        }
        Key key{sizes->ranks, sizes->allreduce_bytes, sizes->allgather_max.value_or(0)};
        auto [it, fresh] = groups.try_emplace(key);
        if (fresh) {
            it->second.info = sweep.info;
            sizes_of[key] = *sizes;
        }
        it->second.experiments.push_back(experiment);
    }
    std::vector<Point> points;
    std::vector<StoredExperiment> deployed;  // each group's winner as deployed (its changes only)
    std::vector<PointSettings> judged;
    deployed.reserve(groups.size());
    judged.reserve(groups.size());
    std::optional<Error> best_error;
    for (const auto& [key, group] : groups) {
        auto chosen = best_point(group, metric);
        if (!chosen) {
            if (!best_error) best_error = chosen.error();
            continue;
        }
        for (const auto& experiment : sweep.experiments)
            if (experiment.experiment.id == chosen->best.exp_id) {
                judged.push_back(chosen->settings);
                deployed.push_back(deployed_point(experiment, judged.back()));
                points.push_back(Point{&deployed.back(), sizes_of[key], &judged.back()});
            }
    }
    if (points.empty()) {
        if (size_error) return *size_error;
        if (best_error) return *best_error;
        auto any = best_experiment(sweep, metric);  // says which metrics exist
        if (!any) return any.error();
        return Error::bad_input("no ok experiment measured the metric");
    }
    return profile_of(sweep, points, metric,
                      fmt::format("per message size the point `results best` recommends for {} ({} size{})",
                                  metric, points.size(), points.size() == 1 ? "" : "s"));
}

}  // namespace ncclsweep::results::exports
