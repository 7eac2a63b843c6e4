// Deployable forms of one point: sitecustomize.py and env file (core/plan/render), and lines for
// NCCL's example tuner plugin (plugins/tuner/example: CSV, '#' comments, first match wins).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "core/nccl/nccl_detail.hpp"
#include "core/plan/render.hpp"
#include "core/text.hpp"
#include "results/export/exports.hpp"

namespace ncclsweep::results::exports {
namespace {

namespace nd = ::ncclsweep::nccl::detail;

render::Provenance provenance_of(const SweepData& sweep, const StoredExperiment& experiment) {
    return {sweep.info.record.name, experiment.experiment.id, experiment.experiment.key};
}

std::optional<std::string> workload_value(const StoredExperiment& experiment, std::string_view name) {
    std::optional<std::string> value;
    for (const auto& [n, v] : experiment.experiment.workload)
        if (n == name) value = v;
    return value;
}

std::optional<std::string> env_value(const StoredExperiment& experiment, std::string_view name) {
    std::optional<std::string> value;
    for (const auto& [n, v] : experiment.experiment.env)
        if (n == name) value = v;
    return value;
}

std::optional<std::int64_t> to_int(const std::string& text) {
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

struct Preset {
    const char* name;
    int hidden;
    int vocab;
};
// The tpverify model presets (engine/model/model.cpp; docs/workload.md): the shapes that set message sizes.
constexpr Preset k_presets[] = {
    {"kimi-k2.5", 7168, 163840}, {"deepseek-v3", 7168, 129280}, {"llama-70b", 8192, 128256}};

bool runs_tpverify(const StoredExperiment& experiment) {
    const auto& argv = experiment.experiment.argv;
    return !argv.empty() && std::filesystem::path(argv[0]).filename() == "tpverify";
}

/// A comment line the plugin skips: starts with '#', one line, under its 256-byte line buffer.
std::string comment(std::string_view text) {
    std::string line = "# " + clean_text(text, false);
    if (line.size() > 250) line = std::string(utf8_prefix(line, 246)) + "...";
    return line + "\n";
}

/// The plugin's spelling of an NCCL_ALGO token (nvlstree -> nvls_tree, ...).
std::string plugin_algorithm(std::string_view token) {
    if (token == "collnetdirect") return "collnet_direct";
    if (token == "collnetchain") return "collnet_chain";
    if (token == "nvlstree") return "nvls_tree";
    return std::string(token);
}

/// The single element NCCL_ALGO/NCCL_PROTO selects for collective f, "" when the value leaves
/// f to NCCL; an error when it allows several (the plugin picks exactly one).
Result<std::string> single_choice(const nd::ParsedList& parsed, std::size_t f,
                                  const std::vector<std::string_view>& elements, std::string_view variable,
                                  std::string_view value, int exp_id) {
    if (!parsed.covered[f]) return std::string();
    std::vector<std::string_view> chosen;
    for (std::size_t e = 0; e < elements.size(); ++e)
        if (parsed.enabled[f][e]) chosen.push_back(elements[e]);
    if (chosen.size() == 1) return std::string(chosen.front());
    return Error::bad_input(fmt::format(
        "experiment {}: {}={} allows {} for {} ({}); the tuner plugin forces exactly one per collective, so "
        "this "
        "point cannot be expressed as a tuner line; deploy it with --format env or sitecustomize",
        exp_id, variable, clean_text(value, false), chosen.empty() ? "nothing" : "several choices",
        nd::k_collectives[f], fmt::join(chosen, ",")));
}

/// Channels for the plugin: an exact count when MIN and MAX agree, -1 when neither is set.
Result<int> plugin_channels(const StoredExperiment& experiment) {
    std::optional<std::int64_t> low, high;
    std::vector<std::string> seen;
    for (const char* name : {"NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS", "NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS"}) {
        auto value = env_value(experiment, name);
        if (!value) continue;
        auto number = to_int(*value);
        if (!number)
            return Error::bad_input(fmt::format("experiment {}: {}={} is not a number",
                                                experiment.experiment.id, name, clean_text(*value, false)));
        seen.push_back(fmt::format("{}={}", name, *number));
        bool is_min = std::string_view(name).find("MIN") != std::string_view::npos;
        auto& slot = is_min ? low : high;
        slot = slot ? (is_min ? std::max(*slot, *number) : std::min(*slot, *number)) : *number;
    }
    if (!low && !high) return -1;
    if (low && high && *low == *high) return static_cast<int>(*low);
    return Error::bad_input(
        fmt::format("experiment {}: {} bounds the channel count, but the tuner plugin sets an exact count; "
                    "give the sweep equal "
                    "MIN and MAX (e.g. NCCL_MIN_CTAS=NCCL_MAX_CTAS) or deploy this point with --format env",
                    experiment.experiment.id, fmt::join(seen, " ")));
}

}  // namespace

std::string to_sitecustomize(const SweepData& sweep, const StoredExperiment& experiment) {
    return render::sitecustomize(experiment.experiment.env, provenance_of(sweep, experiment));
}

Result<std::string> to_env_file(const SweepData& sweep, const StoredExperiment& experiment) {
    return render::env_file(experiment.experiment.env, provenance_of(sweep, experiment));
}

Result<MessageSizes> message_sizes(const StoredExperiment& experiment) {
    const bool engine = runs_tpverify(experiment);
    const int id = experiment.experiment.id;
    auto integer = [&](const char* name, std::optional<std::int64_t> fallback) -> Result<std::int64_t> {
        auto text = workload_value(experiment, name);
        if (!text) {
            if (fallback) return *fallback;
            return Error::bad_input(
                fmt::format("experiment {}: the workload has no parameter '{}', so the collective sizes are "
                            "unknown; tuner lines "
                            "need tokens and hidden (or model) among the workload parameters",
                            id, name));
        }
        auto value = to_int(*text);
        if (!value || *value <= 0)
            return Error::bad_input(
                fmt::format("experiment {}: workload parameter {}={} is not a positive integer", id, name,
                            clean_text(*text, false)));
        return *value;
    };
    auto model = workload_value(experiment, "model");
    if (!model && engine) model = "kimi-k2.5";
    const Preset* preset = nullptr;
    for (const auto& p : k_presets)
        if (model && *model == p.name) preset = &p;
    if (model && !preset && !workload_value(experiment, "hidden"))
        return Error::bad_input(
            fmt::format("experiment {}: model '{}' is not a tpverify preset (kimi-k2.5, "
                        "deepseek-v3, llama-70b) and no 'hidden' parameter gives its width",
                        id, clean_text(*model, false)));
    auto tokens = integer("tokens", engine ? std::optional<std::int64_t>(4) : std::nullopt);
    if (!tokens) return tokens.error();
    auto hidden = integer("hidden", preset ? std::optional<std::int64_t>(preset->hidden) : std::nullopt);
    if (!hidden) return hidden.error();
    auto tp = integer("tp", engine ? std::optional<std::int64_t>(1) : std::nullopt);
    if (!tp) return tp.error();
    MessageSizes sizes;
    sizes.ranks = static_cast<int>(*tp);
    sizes.allreduce_bytes = static_cast<std::uint64_t>(*tokens) * static_cast<std::uint64_t>(*hidden) * 2;
    std::optional<std::int64_t> vocab;
    if (auto text = workload_value(experiment, "vocab"))
        vocab = to_int(*text);
    else if (preset)
        vocab = preset->vocab;
    if (vocab && *vocab > 0) {
        std::uint64_t per_rank =
            static_cast<std::uint64_t>(*tokens) * static_cast<std::uint64_t>(*vocab / *tp) * 2;
        sizes.allgather_min = per_rank;
        sizes.allgather_max = per_rank * static_cast<std::uint64_t>(*tp);
    }
    return sizes;
}

Result<std::string> to_nccl_tuner(const SweepData& sweep, const StoredExperiment& experiment,
                                  const PointSettings* settings) {
    const int id = experiment.experiment.id;
    auto sizes = message_sizes(experiment);
    if (!sizes) return sizes.error();
    std::optional<std::vector<TunerChoice>> choices;
    if (settings) choices = tuner_choices(experiment.outcome.effective_nccl, *settings);
    // The byte range: every size the sweep's workloads use at this rank count.
    std::uint64_t ar_min = sizes->allreduce_bytes, ar_max = sizes->allreduce_bytes;
    std::optional<std::uint64_t> ag_min = sizes->allgather_min, ag_max = sizes->allgather_max;
    for (const auto& other : sweep.experiments) {
        auto s = message_sizes(other);
        if (!s || s->ranks != sizes->ranks) continue;
        ar_min = std::min(ar_min, s->allreduce_bytes);
        ar_max = std::max(ar_max, s->allreduce_bytes);
        if (ag_min && s->allgather_min) ag_min = std::min(*ag_min, *s->allgather_min);
        if (ag_max && s->allgather_max) ag_max = std::max(*ag_max, *s->allgather_max);
    }
    const std::string algo_value = env_value(experiment, "NCCL_ALGO").value_or("");
    const std::string proto_value = env_value(experiment, "NCCL_PROTO").value_or("");
    const std::vector<std::string_view> algos(nd::k_algorithms.begin(), nd::k_algorithms.end());
    const std::vector<std::string_view> protos(nd::k_protocols.begin(), nd::k_protocols.end());
    std::string reason;
    std::optional<nd::ParsedList> algo_list, proto_list;
    if (!algo_value.empty() && !(algo_list = nd::parse_list(algo_value, algos, reason)))
        return Error::bad_input(
            fmt::format("experiment {}: NCCL_ALGO={}: {}", id, clean_text(algo_value, false), reason));
    if (!proto_value.empty() && !(proto_list = nd::parse_list(proto_value, protos, reason)))
        return Error::bad_input(
            fmt::format("experiment {}: NCCL_PROTO={}: {}", id, clean_text(proto_value, false), reason));
    // From the values as written (no effective choice recorded): exact channel counts only.
    auto channels = choices ? Result<int>(-1) : plugin_channels(experiment);
    if (!channels) return channels.error();

    std::string lines;
    std::vector<std::string> skipped;
    if (choices) {
        // What was measured: the point's own effective choice for each collective a change touched.
        for (const auto& c : *choices) {
            const bool gather = c.collective == "allgather";
            if (c.collective != "allreduce" && !gather) continue;
            if (gather && !ag_min) continue;
            lines += fmt::format("{},{},{},{},{},{},1,{},-1,-1\n", c.collective, gather ? *ag_min : ar_min,
                                 gather ? *ag_max : ar_max, plugin_algorithm(c.algo), c.proto,
                                 c.channels > 0 ? c.channels : -1, sizes->ranks);
        }
        if (lines.empty())
            return Error::bad_input(fmt::format(
                "experiment {}: none of its deployed settings changes NCCL's choice for a collective (they "
                "are "
                "NCCL's own choices or inert), so there is nothing for a tuner line to force; deploy it with "
                "--format env",
                id));
    }
    for (std::string_view collective : {"allreduce", "allgather"}) {
        if (choices) break;
        const bool gather = collective == "allgather";
        if (gather && !ag_min) continue;
        std::size_t f = static_cast<std::size_t>(
            std::find(nd::k_collectives.begin(), nd::k_collectives.end(), collective) -
            nd::k_collectives.begin());
        auto algo = algo_list ? single_choice(*algo_list, f, algos, "NCCL_ALGO", algo_value, id)
                              : Result<std::string>("");
        if (!algo) return algo.error();
        auto proto = proto_list ? single_choice(*proto_list, f, protos, "NCCL_PROTO", proto_value, id)
                                : Result<std::string>("");
        if (!proto) return proto.error();
        if (algo->empty() && proto->empty()) {
            if (*channels != -1 && !gather)
                return Error::bad_input(
                    fmt::format("experiment {}: it fixes the channel count ({}) but neither NCCL_ALGO nor "
                                "NCCL_PROTO; a tuner line "
                                "must name an algorithm and a protocol, so add them to the sweep or deploy "
                                "this point with "
                                "--format env",
                                id, *channels));
            continue;  // NCCL's own choice for this collective
        }
        if (algo->empty() || proto->empty()) {
            const char* set = algo->empty() ? "NCCL_PROTO" : "NCCL_ALGO";
            const char* unset = algo->empty() ? "NCCL_ALGO" : "NCCL_PROTO";
            if (gather) {  // the logits all-gather is secondary: leave it to NCCL and say so
                skipped.push_back(
                    fmt::format("allgather: {} is set but not {}, no line (keep {} in the environment)", set,
                                unset, set));
                continue;
            }
            return Error::bad_input(
                fmt::format("experiment {}: for {} the point sets {} but not {}; a tuner line must name both "
                            "an algorithm and a "
                            "protocol (the plugin has no 'any'), so add {} to the sweep or deploy this point "
                            "with --format env",
                            id, collective, set, unset, unset));
        }
        std::size_t a = std::find(algos.begin(), algos.end(), *algo) - algos.begin();
        std::size_t p = std::find(protos.begin(), protos.end(), *proto) - protos.begin();
        if (!nd::algo_proto_exists(a, p, f))
            return Error::bad_input(
                fmt::format("experiment {}: NCCL has no {}/{} for {}; no tuner line can force it", id, *algo,
                            *proto, collective));
        lines +=
            fmt::format("{},{},{},{},{},{},1,{},-1,-1\n", collective, gather ? *ag_min : ar_min,
                        gather ? *ag_max : ar_max, plugin_algorithm(*algo), *proto, *channels, sizes->ranks);
    }
    if (lines.empty())
        return Error::bad_input(
            fmt::format("experiment {}: it sets neither NCCL_ALGO nor NCCL_PROTO nor channels, so "
                        "NCCL chose by itself and there is nothing for a tuner line to force",
                        id));
    std::string out =
        comment("NCCL example tuner plugin config (NCCL_TUNER_CONFIG_FILE) written by ncclsweep export");
    out += comment("WARNING: " + std::string(k_example_plugin_warning));
    out +=
        comment(fmt::format("sweep {} '{}', experiment {} (key {}): {}", sweep.info.id,
                            sweep.info.record.name, id, experiment.experiment.key, params_label(experiment)));
    out += comment(fmt::format("allreduce bytes = tokens x hidden x 2 over this sweep at {} ranks: {}..{}",
                               sizes->ranks, ar_min, ar_max));
    if (ag_min)
        out += comment(
            fmt::format("allgather (logits) bytes from per-rank to whole buffer: {}..{}", *ag_min, *ag_max));
    out += comment(
        "collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff");
    std::vector<std::string> rest;
    for (const auto& [name, value] : experiment.experiment.env)
        if (name.rfind("NCCL_", 0) == 0 && name != "NCCL_ALGO" && name != "NCCL_PROTO" &&
            name.find("CTAS") == std::string::npos && name.find("NCHANNELS") == std::string::npos)
            rest.push_back(name + "=" + value);
    if (!rest.empty())
        out +=
            comment(fmt::format("not expressible here, keep in the environment: {}", fmt::join(rest, " ")));
    for (const auto& note : skipped) out += comment(note);
    return out + lines;
}

}  // namespace ncclsweep::results::exports
