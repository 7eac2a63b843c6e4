#pragma once
// What NCCL actually used, read from its own INFO lines (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS
// including TUNING and ENV): "AllReduce: 14336 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}"
// and "NCCL_ALGO set by environment to allreduce:tree", and what our tuner plugin
// (libnccl-tuner-ncclsweep.so) logged through NCCL ("ncclsweep tuner: ..."). Points whose
// settings NCCL ignored then show the same effective configuration. Pure text processing: no
// process, no clock.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ncclsweep::nccl {

/// One algorithm/protocol choice NCCL printed for a collective and message size.
struct TuningChoice {
    std::string collective;   ///< "AllReduce", "AllGather", ... ("?" when the line has none)
    std::uint64_t bytes = 0;  ///< message size in bytes
    std::string algo;         ///< upper case: RING, TREE, NVLS, ... (numeric ids are mapped)
    std::string proto;        ///< upper case: LL, LL128, SIMPLE (numeric ids are mapped)
    int channel_lo = -1;      ///< channel{Lo..Hi} lower bound, -1 when not printed
    int channel_hi = -1;      ///< channel{Lo..Hi} upper bound, -1 when not printed
    int nchannels = -1;       ///< "nchannels N" when printed (older NCCL), else -1
    int nthreads = -1;        ///< "nthreads N" when printed, else -1

    /// Ordering used for the canonical summary (collective, bytes, algo, proto, channels).
    auto operator<=>(const TuningChoice&) const = default;
    /// Canonical text, e.g. "AllReduce 14336B: RING/LL ch0..0".
    [[nodiscard]] std::string to_string() const;
};

/// One "NCCL_X set by environment to V" line: proof that a variable reached NCCL.
struct EnvSetting {
    std::string name;   ///< NCCL_ALGO
    std::string value;  ///< as NCCL printed it (a trailing '.' after a number removed)
    /// Ordering by name, then value.
    auto operator<=>(const EnvSetting&) const = default;
};

/// One line of our tuner plugin (tuner/plugin.c), reduced to a path-free canonical text so the
/// same behaviour reads the same whatever file the profile was in.
struct TunerEvent {
    enum class Kind {
        loaded,    ///< "profile loaded: 2 rules, 1 for nRanks 8 nNodes 1"
        rejected,  ///< "profile rejected: line 4: unknown algorithm 'rnig' ..." or "profile not set"
        applied,   ///< "AllReduce 57344B -> TREE/LL ch0"
        ignored,   ///< "AllReduce 57344B: RING/LL128 not offered by NCCL"
    };
    Kind kind = Kind::applied;
    std::string text;
    /// Ordering by kind, then text.
    auto operator<=>(const TunerEvent&) const = default;
};

/// Parses a line of our tuner plugin (INFO or WARN, with or without NCCL's prefix); nullopt when
/// the line is not one.
[[nodiscard]] std::optional<TunerEvent> parse_tuner_line(std::string_view line);

/// Parses a TUNING line (with or without the "host:pid:tid [rank] NCCL INFO" prefix);
/// nullopt when the line is not one.
[[nodiscard]] std::optional<TuningChoice> parse_tuning_line(std::string_view line);

/// Parses an ENV line ("NCCL_PROTO set by environment to LL"); nullopt when it is not one.
[[nodiscard]] std::optional<EnvSetting> parse_env_line(std::string_view line);

/// What ncclsweep adds to an experiment's environment so that NCCL prints its TUNING lines:
/// NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=TUNING (INFO limited to that one subsystem).
[[nodiscard]] std::vector<std::pair<std::string, std::string>> tuning_request();

/// Collects TUNING and ENV lines of one experiment, deduplicated (every rank prints the same
/// line) and bounded in size; gives a canonical, sorted summary.
class EffectiveNccl {
public:
    /// At most this many distinct choices (and env settings) are kept; the rest are counted.
    static constexpr std::size_t k_max_entries = 256;

    /// Records `line` if it is a TUNING, ENV or tuner-plugin line; returns whether it was one.
    bool add_line(std::string_view line);
    /// Distinct choices, sorted.
    [[nodiscard]] std::vector<TuningChoice> choices() const;
    /// Distinct env settings, sorted by name.
    [[nodiscard]] std::vector<EnvSetting> env() const;
    /// Distinct tuner-plugin events, sorted by kind then text.
    [[nodiscard]] std::vector<TunerEvent> tuner() const;
    /// Distinct entries not kept because the bound was reached.
    [[nodiscard]] std::size_t dropped() const { return m_dropped; }
    /// True when nothing was recorded.
    [[nodiscard]] bool empty() const { return m_choices.empty() && m_env.empty() && m_tuner.empty(); }
    /// "AllReduce 14336B: RING/LL ch0..0; AllGather ...; env: NCCL_ALGO=allreduce:tree;
    /// tuner: AllReduce 14336B -> RING/LL ch0"
    /// ("" when empty); identical effective configurations give identical strings.
    [[nodiscard]] std::string summary() const;

private:
    /// Payloads (text after "NCCL INFO ") already recorded: the fast path for repeated lines,
    /// taken on every TUNING line of an INFO-heavy log. Open addressing over power-of-two slots
    /// with a multiply-xor hash of 8-byte words: no division and no allocation per lookup.
    class SeenPayloads {
    public:
        [[nodiscard]] bool contains(std::string_view text) const;
        /// Adds `text` unless k_capacity payloads are kept already.
        void insert(std::string_view text);

    private:
        static constexpr std::size_t k_capacity = 4 * k_max_entries;
        static constexpr std::size_t k_slots = 2 * k_capacity;  // a power of two, at most half full
        std::vector<std::string> m_texts;
        std::vector<std::uint64_t> m_hashes;  ///< per slot (allocated at the first insert)
        std::vector<std::uint32_t> m_slots;   ///< per slot: 1 + index into m_texts, 0 = empty
    };
    std::set<TuningChoice> m_choices;
    std::set<EnvSetting> m_env;
    std::set<TunerEvent> m_tuner;
    SeenPayloads m_seen;
    std::size_t m_dropped = 0;
};

}  // namespace ncclsweep::nccl
