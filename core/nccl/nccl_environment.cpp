// check_environment: per-value checks plus the combinations that only show when several
// variables and the workload are looked at together (docs/nccl-validation.md).
#include <fmt/format.h>

#include <map>

#include "core/nccl/nccl.hpp"
#include "core/nccl/nccl_detail.hpp"

namespace ncclsweep::nccl {

namespace {

using detail::shown;

constexpr std::uint64_t k_small_message_bytes = 64 * 1024;
constexpr std::size_t k_ll = 0;
constexpr std::size_t k_ll128 = 1;
constexpr std::size_t k_simple = 2;

/// The last value of each variable (a later assignment overrides an earlier one).
using EnvMap = std::map<std::string, std::string>;

std::optional<std::int64_t> integer_of(const EnvMap& env, const std::string& name) {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    std::string_view text = it->second;
    if (text.size() > 1 && text[0] == '0' && text[1] != 'x' && text[1] != 'X')
        return std::nullopt;  // octal: already an error
    return detail::parse_integer(text);
}

std::optional<detail::ParsedList> list_of(const EnvMap& env, const std::string& name,
                                          const std::vector<std::string_view>& elements) {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) return std::nullopt;
    std::string ignored;
    return detail::parse_list(it->second, elements, ignored);
}

/// Merges the new and deprecated names of one bound; `pick_max` for MIN (larger is stricter).
std::optional<std::int64_t> merged_bound(const EnvMap& env, const std::string& current,
                                         const std::string& deprecated, bool pick_max,
                                         std::vector<Finding>& out) {
    auto a = integer_of(env, current);
    auto b = integer_of(env, deprecated);
    if (a && b && *a != *b) {
        std::int64_t wins = pick_max ? std::max(*a, *b) : std::min(*a, *b);
        out.push_back(
            {Severity::warning, current,
             fmt::format("both {}={} and its deprecated name {}={} are set; NCCL uses the more restrictive "
                         "value {}. Set only {}",
                         current, *a, deprecated, *b, wins, current),
             "channels-both-names"});
    }
    if (a && b) return pick_max ? std::max(*a, *b) : std::min(*a, *b);
    return a ? a : b;
}

void check_channels(const EnvMap& env, std::vector<Finding>& out) {
    auto low = merged_bound(env, "NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS", true, out);
    auto high = merged_bound(env, "NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS", false, out);
    if (low && high && *low > *high)
        out.push_back(
            {Severity::error, "",
             fmt::format("the minimum channel count {} is above the maximum {} (after merging NCCL_MIN_CTAS/"
                         "NCCL_MIN_NCHANNELS and NCCL_MAX_CTAS/NCCL_MAX_NCHANNELS; the more restrictive name "
                         "wins); make the minimum <= the maximum",
                         *low, *high),
             "channels-min-gt-max"});
}

/// Collectives for which both NCCL_ALGO and NCCL_PROTO replace the list and no pair is implemented.
void check_algo_proto(const EnvMap& env, std::vector<Finding>& out) {
    const std::vector<std::string_view> algos(detail::k_algorithms.begin(), detail::k_algorithms.end());
    const std::vector<std::string_view> protos(detail::k_protocols.begin(), detail::k_protocols.end());
    auto algo = list_of(env, "NCCL_ALGO", algos);
    auto proto = list_of(env, "NCCL_PROTO", protos);
    if (!algo || !proto) return;
    static const std::array<std::string_view, 5> k_display = {"Broadcast", "Reduce", "AllGather",
                                                              "ReduceScatter", "AllReduce"};
    std::string broken;
    for (std::size_t f = 0; f < detail::k_collectives.size(); ++f) {
        if (!algo->covered[f] || !proto->covered[f]) continue;
        bool any_algo = false;
        bool usable = false;
        for (std::size_t a = 0; a < algos.size(); ++a) {
            if (!algo->enabled[f][a]) continue;
            bool algo_alone = false;
            for (std::size_t p = 0; p < protos.size(); ++p) {
                algo_alone = algo_alone || detail::algo_proto_exists(a, p, f);
                usable = usable || (proto->enabled[f][p] && detail::algo_proto_exists(a, p, f));
            }
            any_algo = any_algo || algo_alone;
        }
        if (any_algo && !usable) broken += (broken.empty() ? "" : ", ") + std::string(k_display[f]);
    }
    if (!broken.empty())
        out.push_back(
            {Severity::warning, "",
             fmt::format("NCCL_ALGO={} with NCCL_PROTO={} leaves no algorithm/protocol pair NCCL implements "
                         "for {} (e.g. NVLS, CollNet and PAT exist only with Simple); that call fails with "
                         "\"No algorithm/protocol available\"",
                         shown(env.at("NCCL_ALGO")), shown(env.at("NCCL_PROTO")), broken),
             "no-algo-proto"});
}

void check_ll128_pcie(const EnvMap& env, const WorkloadContext& context, std::vector<Finding>& out) {
    if (!context.topology || context.topology->rfind("pcie", 0) != 0) return;
    const std::vector<std::string_view> protos(detail::k_protocols.begin(), detail::k_protocols.end());
    auto proto = list_of(env, "NCCL_PROTO", protos);
    if (!proto) return;
    bool forced_on = false;
    for (std::size_t f = 0; f < detail::k_collectives.size(); ++f)
        forced_on = forced_on || (proto->covered[f] && proto->enabled[f][k_ll128]);
    if (!forced_on) return;
    out.push_back(
        {Severity::warning, "NCCL_PROTO",
         fmt::format("NCCL_PROTO={} enables LL128 on a PCIe topology ({}); NCCL enables LL128 by default "
                     "only on NVLink and documents a risk of silent data corruption elsewhere (a ^-list "
                     "forces on every protocol it does not exclude). Sweep it only with result checking "
                     "(tpverify --check) or exclude it with ^LL128",
                     shown(env.at("NCCL_PROTO")), shown(*context.topology)),
         "ll128-pcie"});
}

/// True when NCCL_PROTO restricts every collective it names to `protocol` alone.
bool proto_only(const std::optional<detail::ParsedList>& proto, std::size_t protocol) {
    if (!proto || !proto->has_global_entry) return false;
    for (std::size_t f = 0; f < detail::k_collectives.size(); ++f)
        for (std::size_t p = 0; p < detail::k_protocols.size(); ++p)
            if (proto->enabled[f][p] != (p == protocol)) return false;
    return true;
}

/// True when NCCL_PROTO is set and disables `protocol` for every collective.
bool proto_excluded(const std::optional<detail::ParsedList>& proto, std::size_t protocol) {
    if (!proto) return false;
    for (std::size_t f = 0; f < detail::k_collectives.size(); ++f)
        if (!proto->covered[f] || proto->enabled[f][protocol]) return false;
    return true;
}

void check_buffers(const EnvMap& env, std::vector<Finding>& out) {
    const std::vector<std::string_view> protos(detail::k_protocols.begin(), detail::k_protocols.end());
    auto proto = list_of(env, "NCCL_PROTO", protos);
    const std::array<std::pair<const char*, std::size_t>, 3> buffers = {
        {{"NCCL_BUFFSIZE", k_simple}, {"NCCL_LL_BUFFSIZE", k_ll}, {"NCCL_LL128_BUFFSIZE", k_ll128}}};
    for (const auto& [name, protocol] : buffers) {
        if (!env.count(name) || !proto_excluded(proto, protocol)) continue;
        out.push_back(
            {Severity::warning, name,
             fmt::format("{} sizes only the {} protocol's buffer, which NCCL_PROTO={} disables; it has no "
                         "effect (NCCL_BUFFSIZE is for Simple, NCCL_LL_BUFFSIZE for LL, "
                         "NCCL_LL128_BUFFSIZE for LL128)",
                         name, detail::k_protocols[protocol], shown(env.at("NCCL_PROTO"))),
             "buffsize-unused"});
    }
}

void check_small_messages(const EnvMap& env, const WorkloadContext& context, std::vector<Finding>& out) {
    if (!context.max_message_bytes || *context.max_message_bytes > k_small_message_bytes) return;
    const auto bytes = *context.max_message_bytes;
    for (const char* name :
         {"NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS"}) {
        if (!env.count(name)) continue;
        out.push_back(
            {Severity::warning, name,
             fmt::format("{} is likely ignored at this workload's message size ({} bytes <= 64 KiB): for "
                         "small messages NCCL cuts channels and threads itself (a 14 KB ring/LL all-reduce "
                         "on 8 ranks runs on 1 channel with 128 threads whatever these say); expect the "
                         "same effective configuration, check NCCL_DEBUG_SUBSYS=TUNING",
                         name, bytes),
             "ignored-small"});
    }
    const std::vector<std::string_view> protos(detail::k_protocols.begin(), detail::k_protocols.end());
    auto proto = list_of(env, "NCCL_PROTO", protos);
    if (env.count("NCCL_BUFFSIZE") && !proto_only(proto, k_simple) && !proto_excluded(proto, k_simple))
        out.push_back(
            {Severity::warning, "NCCL_BUFFSIZE",
             fmt::format("NCCL_BUFFSIZE is likely ignored at this workload's message size ({} bytes <= "
                         "64 KiB): it sizes only the Simple protocol's buffer and NCCL picks LL for small "
                         "messages, whose buffer is NCCL_LL_BUFFSIZE",
                         bytes),
             "ignored-small"});
}

void check_p2p(const EnvMap& env, std::vector<Finding>& out) {
    auto disable = integer_of(env, "NCCL_P2P_DISABLE");
    if (disable && *disable == 1 && env.count("NCCL_P2P_LEVEL"))
        out.push_back(
            {Severity::warning, "NCCL_P2P_LEVEL",
             fmt::format("NCCL_P2P_LEVEL={} has no effect while NCCL_P2P_DISABLE=1 turns the P2P transport "
                         "off",
                         shown(env.at("NCCL_P2P_LEVEL"))),
             "p2p-level-ignored"});
}

}  // namespace

std::vector<Finding> check_environment(const std::vector<Assignment>& env, const WorkloadContext& context) {
    std::vector<Finding> out;
    EnvMap last;
    for (const auto& [name, value] : env) {
        auto findings = check_value(name, value);
        out.insert(out.end(), findings.begin(), findings.end());
        if (name.rfind("NCCL_", 0) == 0) last[name] = value;
    }
    check_channels(last, out);
    check_algo_proto(last, out);
    check_ll128_pcie(last, context, out);
    check_buffers(last, out);
    check_small_messages(last, context, out);
    check_p2p(last, out);
    return out;
}

}  // namespace ncclsweep::nccl
