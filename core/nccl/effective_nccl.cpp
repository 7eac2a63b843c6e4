// Hand-written parsers for NCCL's TUNING and ENV info lines. They run on every TUNING line
// of an INFO-heavy log, so they avoid regexes and allocations on the repeated-line path.
#include "core/nccl/effective_nccl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace ncclsweep::nccl {
namespace {

constexpr std::string_view k_info_marker = "NCCL INFO ";
constexpr std::string_view k_tuning_marker = "Bytes -> Algo ";
constexpr std::string_view k_env_marker = " set by environment to ";
constexpr std::size_t k_max_summary_chars = 8192;

/// The text after "NCCL INFO " (or the whole line, trimmed, when there is no prefix).
std::string_view payload_of(std::string_view line) {
    if (auto at = line.find(k_info_marker); at != std::string_view::npos)
        line.remove_prefix(at + k_info_marker.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t'))
        line.remove_suffix(1);
    return line;
}

std::string_view next_token(std::string_view& rest) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    auto end = rest.find(' ');
    auto token = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    return token;
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && ptr == text.data() + text.size();
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

/// Older NCCL prints numeric ids (NCCL_ALGO_TREE = 0, RING = 1, ...; LL = 0, LL128 = 1, SIMPLE = 2).
std::string algo_name(std::string_view token) {
    static constexpr std::array<std::string_view, 7> k_algos = {
        "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
    if (unsigned id = 0; parse_number(token, id))
        return id < k_algos.size() ? std::string(k_algos[id]) : fmt::format("ALGO{}", id);
    return upper(token);
}

std::string proto_name(std::string_view token) {
    static constexpr std::array<std::string_view, 3> k_protos = {"LL", "LL128", "SIMPLE"};
    if (unsigned id = 0; parse_number(token, id))
        return id < k_protos.size() ? std::string(k_protos[id]) : fmt::format("PROTO{}", id);
    return upper(token);
}

/// "channel{Lo..Hi}={0..3}" -> 0, 3.
bool parse_channel_range(std::string_view token, int& lo, int& hi) {
    auto open = token.find("={");
    auto dots = token.find("..", open == std::string_view::npos ? 0 : open);
    auto close = token.rfind('}');
    if (open == std::string_view::npos || dots == std::string_view::npos || close == std::string_view::npos ||
        close < dots)
        return false;
    return parse_number(token.substr(open + 2, dots - open - 2), lo) &&
           parse_number(token.substr(dots + 2, close - dots - 2), hi);
}

constexpr std::string_view k_tuner_marker = "ncclsweep tuner: ";
constexpr std::size_t k_max_tuner_text = 240;

/// "AllReduce 57344 bytes" at the start of `text`: the name and the number, rest after it.
bool collective_and_bytes(std::string_view& text, std::string_view& name, std::uint64_t& bytes) {
    name = next_token(text);
    auto number = next_token(text);
    if (name.empty() || !parse_number(number, bytes)) return false;
    if (!text.starts_with(" bytes")) return false;
    text.remove_prefix(6);
    return true;
}

}  // namespace

std::optional<TunerEvent> parse_tuner_line(std::string_view line) {
    auto at = line.find(k_tuner_marker);
    if (at == std::string_view::npos) return std::nullopt;
    auto text = line.substr(at + k_tuner_marker.size());
    while (!text.empty() && (text.back() == ' ' || text.back() == '\r' || text.back() == '\t'))
        text.remove_suffix(1);
    TunerEvent event;
    if (text.starts_with("NCCLSWEEP_TUNER_PROFILE is not set")) {
        event.kind = TunerEvent::Kind::rejected;
        event.text = "profile not set";
        return event;
    }
    if (text.starts_with("profile ")) {
        // "profile PATH loaded: ..." / "profile PATH rejected: REASON; every collective ...": the
        // path may hold spaces, the wording after it is ours.
        if (auto loaded = text.rfind(" loaded: "); loaded != std::string_view::npos) {
            event.kind = TunerEvent::Kind::loaded;
            event.text = "profile loaded: " + std::string(text.substr(loaded + 9));
        } else if (auto rejected = text.find(" rejected: "); rejected != std::string_view::npos) {
            auto reason = text.substr(rejected + 11);
            reason = reason.substr(0, reason.rfind("; every collective"));
            event.kind = TunerEvent::Kind::rejected;
            event.text = "profile rejected: " + std::string(reason);
        } else {
            return std::nullopt;
        }
        if (event.text.size() > k_max_tuner_text) event.text.resize(k_max_tuner_text);
        return event;
    }
    std::string_view name;
    std::uint64_t bytes = 0;
    if (!collective_and_bytes(text, name, bytes)) return std::nullopt;
    if (text.starts_with(" -> algo ")) {
        // " -> algo TREE proto LL channels 0 (PATH:LINE)"
        text.remove_prefix(9);
        auto algo = next_token(text);
        if (next_token(text) != "proto") return std::nullopt;
        auto proto = next_token(text);
        int channels = -1;
        if (next_token(text) != "channels" || !parse_number(next_token(text), channels)) return std::nullopt;
        event.kind = TunerEvent::Kind::applied;
        event.text = fmt::format("{} {}B -> {}/{} ch{}", name, bytes, algo, proto, channels);
        return event;
    }
    if (auto asks = text.find(" asks for "); text.starts_with(":") && asks != std::string_view::npos) {
        // ": PATH:LINE asks for RING/LL128, which NCCL does not offer here ..."
        auto combination = text.substr(asks + 10);
        combination = combination.substr(0, combination.find(','));
        event.kind = TunerEvent::Kind::ignored;
        event.text = fmt::format("{} {}B: {} not offered by NCCL", name, bytes, combination.substr(0, 40));
        return event;
    }
    return std::nullopt;
}

std::string TuningChoice::to_string() const {
    std::string out = fmt::format("{} {}B: {}/{}", collective, bytes, algo, proto);
    if (channel_lo >= 0) out += fmt::format(" ch{}..{}", channel_lo, channel_hi);
    if (nchannels >= 0) out += fmt::format(" nch{}", nchannels);
    if (nthreads >= 0) out += fmt::format(" t{}", nthreads);
    return out;
}

std::optional<TuningChoice> parse_tuning_line(std::string_view line) {
    auto text = payload_of(line);
    auto marker = text.find(k_tuning_marker);
    if (marker == std::string_view::npos) return std::nullopt;
    TuningChoice choice;
    // Before the marker: "[Collective: ]N ".
    auto head = text.substr(0, marker);
    while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
    auto digits_begin = head.size();
    while (digits_begin > 0 && std::isdigit(static_cast<unsigned char>(head[digits_begin - 1])))
        --digits_begin;
    if (digits_begin == head.size() || !parse_number(head.substr(digits_begin), choice.bytes))
        return std::nullopt;
    head = head.substr(0, digits_begin);
    while (!head.empty() && (head.back() == ' ' || head.back() == ':')) head.remove_suffix(1);
    auto name_begin = head.size();
    while (name_begin > 0 && std::isalnum(static_cast<unsigned char>(head[name_begin - 1]))) --name_begin;
    choice.collective = name_begin == head.size() ? std::string("?") : std::string(head.substr(name_begin));
    // After the marker: "ALGO proto PROTO [channel{Lo..Hi}={a..b}] [nchannels N] [nthreads N] [time T]".
    auto rest = text.substr(marker + k_tuning_marker.size());
    auto algo = next_token(rest);
    if (algo.empty() || next_token(rest) != "proto") return std::nullopt;
    auto proto = next_token(rest);
    if (proto.empty()) return std::nullopt;
    choice.algo = algo_name(algo);
    choice.proto = proto_name(proto);
    while (!rest.empty()) {
        auto token = next_token(rest);
        if (token.starts_with("channel")) {
            if (!parse_channel_range(token, choice.channel_lo, choice.channel_hi))
                choice.channel_lo = choice.channel_hi = -1;
        } else if (token == "nchannels" || token == "nChannels") {
            if (!parse_number(next_token(rest), choice.nchannels)) choice.nchannels = -1;
        } else if (token == "nthreads" || token == "nThreads") {
            if (!parse_number(next_token(rest), choice.nthreads)) choice.nthreads = -1;
        }
    }
    return choice;
}

std::optional<EnvSetting> parse_env_line(std::string_view line) {
    auto text = payload_of(line);
    auto marker = text.find(k_env_marker);
    if (marker == std::string_view::npos) return std::nullopt;
    auto name = text.substr(0, marker);
    if (auto space = name.rfind(' '); space != std::string_view::npos) name.remove_prefix(space + 1);
    if (!name.starts_with("NCCL_") || name.size() <= 5) return std::nullopt;
    auto value = text.substr(marker + k_env_marker.size());
    // Numeric parameters are printed as "... to 2." — drop that full stop.
    if (value.size() > 1 && value.back() == '.' && std::all_of(value.begin(), value.end() - 1, [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) || c == '-';
        }))
        value.remove_suffix(1);
    return EnvSetting{std::string(name), std::string(value)};
}

namespace {

__extension__ using Wide = unsigned __int128;  // GCC and Clang on 64-bit targets

/// 64x64 -> 128-bit multiply, folded: the mixing step of wyhash (public domain).
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
    const auto product = static_cast<Wide>(a) * b;
    return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
}

std::uint64_t load(const char* at, std::size_t bytes) {
    std::uint64_t word = 0;
    std::memcpy(&word, at, bytes);
    return word;
}

/// A hash of 16 bytes per multiply in the manner of wyhash (payloads are ~70 bytes; std::hash
/// takes twice as long, and it is taken on every TUNING line).
std::uint64_t payload_hash(std::string_view text) {
    constexpr std::uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull,
                            k2 = 0x8ebc6af09c88c6e3ull;
    std::uint64_t seed = k0 ^ text.size();
    const char* at = text.data();
    std::size_t left = text.size();
    for (; left > 16; left -= 16, at += 16) seed = mix(load(at, 8) ^ k1, load(at + 8, 8) ^ seed);
    const std::uint64_t a = left >= 8 ? load(at, 8) : load(at, left);
    const std::uint64_t b = left > 8 ? load(at + 8, left - 8) : 0;
    return mix(k1 ^ text.size(), mix(a ^ k1, b ^ seed ^ k2));
}

}  // namespace

bool EffectiveNccl::SeenPayloads::contains(std::string_view text) const {
    if (m_slots.empty()) return false;
    const std::uint64_t hash = payload_hash(text);
    for (std::size_t slot = hash & (k_slots - 1);; slot = (slot + 1) & (k_slots - 1)) {
        if (m_slots[slot] == 0) return false;
        if (m_hashes[slot] == hash && m_texts[m_slots[slot] - 1] == text) return true;
    }
}

void EffectiveNccl::SeenPayloads::insert(std::string_view text) {
    if (m_texts.size() >= k_capacity || contains(text)) return;
    if (m_slots.empty()) {
        m_slots.assign(k_slots, 0);
        m_hashes.assign(k_slots, 0);
    }
    const std::uint64_t hash = payload_hash(text);
    std::size_t slot = hash & (k_slots - 1);
    while (m_slots[slot] != 0) slot = (slot + 1) & (k_slots - 1);
    m_texts.emplace_back(text);
    m_slots[slot] = static_cast<std::uint32_t>(m_texts.size());
    m_hashes[slot] = hash;
}

bool EffectiveNccl::add_line(std::string_view line) {
    auto text = payload_of(line);
    if (m_seen.contains(text)) return true;
    bool recorded = false;
    if (auto choice = parse_tuning_line(text)) {
        recorded = true;
        if (m_choices.size() < k_max_entries)
            m_choices.insert(std::move(*choice));
        else if (!m_choices.contains(*choice))
            ++m_dropped;
    } else if (auto event = parse_tuner_line(text)) {
        // Before the ENV parser: the plugin's lines quote file names that could say anything.
        recorded = true;
        if (m_tuner.size() < k_max_entries)
            m_tuner.insert(std::move(*event));
        else if (!m_tuner.contains(*event))
            ++m_dropped;
    } else if (auto env = parse_env_line(text)) {
        recorded = true;
        if (m_env.size() < k_max_entries)
            m_env.insert(std::move(*env));
        else if (!m_env.contains(*env))
            ++m_dropped;
    }
    // Remember the payload so the next rank's identical line is a hash lookup; bounded too.
    if (recorded) m_seen.insert(text);
    return recorded;
}

std::vector<TuningChoice> EffectiveNccl::choices() const {
    return {m_choices.begin(), m_choices.end()};
}

std::vector<EnvSetting> EffectiveNccl::env() const {
    return {m_env.begin(), m_env.end()};
}

std::vector<TunerEvent> EffectiveNccl::tuner() const {
    return {m_tuner.begin(), m_tuner.end()};
}

std::string EffectiveNccl::summary() const {
    std::string out;
    for (const auto& choice : m_choices) {
        if (!out.empty()) out += "; ";
        out += choice.to_string();
        if (out.size() > k_max_summary_chars) break;
    }
    if (!m_env.empty()) {
        if (!out.empty()) out += "; ";
        out += "env:";
        for (const auto& setting : m_env) out += fmt::format(" {}={}", setting.name, setting.value);
    }
    if (!m_tuner.empty()) {
        if (!out.empty()) out += "; ";
        out += "tuner:";
        const char* separator = " ";
        for (const auto& event : m_tuner) {
            out += separator + event.text;
            separator = ", ";
            if (out.size() > k_max_summary_chars) break;
        }
    }
    if (out.size() > k_max_summary_chars) {
        out.resize(k_max_summary_chars);
        out += " ...";
    }
    if (m_dropped > 0) out += fmt::format(" (+{} more not kept)", m_dropped);
    return out;
}

std::vector<std::pair<std::string, std::string>> tuning_request() {
    return {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "TUNING"}};
}

}  // namespace ncclsweep::nccl
