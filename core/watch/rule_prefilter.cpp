// The literal prefilter: atoms from RE2's FilteredRE2, the rules each atom makes candidates, and
// one scan per line over a table of byte pairs (see rule_prefilter.hpp).
#include "core/watch/rule_prefilter.hpp"

#include <re2/filtered_re2.h>
#include <re2/re2.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NCCLSWEEP_PREFILTER_AVX2 1
#endif

namespace ncclsweep::inline watch {
namespace {

/// Atoms shorter than this are too common in log text to filter anything.
constexpr int k_min_atom_len = 3;
/// Pair ids fit one byte; 0 is "none" and RulePrefilter::k_hazard is taken.
constexpr std::size_t k_max_pairs = 254;

constexpr std::array<unsigned char, 256> make_lower() {
    std::array<unsigned char, 256> table{};
    for (int c = 0; c < 256; ++c)
        table[static_cast<std::size_t>(c)] = static_cast<unsigned char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return table;
}
constexpr std::array<unsigned char, 256> k_lower = make_lower();

bool is_ascii(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

/// Ordinary output of the programs the watcher reads (NCCL's INFO lines, SGLang, vLLM, uvicorn,
/// Python logging, progress bars): how common a byte or a pair of bytes is, to choose anchors
/// that few positions of an ordinary line share.
constexpr std::string_view k_ordinary_output =
    "gpu-node-01:41000:41200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "gpu-node-01:41000:41200 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal "
    "network plugin.\n"
    "gpu-node-01:41000:41200 [0] NCCL INFO cudaDriverVersion 12080\n"
    "NCCL version 2.27.3+cuda12.8\n"
    "gpu-node-01:41003:41212 [3] NCCL INFO Channel 01/02 : 0 1 2 3 4 5 6 7\n"
    "gpu-node-01:41003:41212 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM/read\n"
    "gpu-node-01:41003:41212 [3] NCCL INFO Connected all rings, use ring PXN 0 GDR 0\n"
    "gpu-node-01:41003:41212 [3] NCCL INFO threadThresholds 8/8/64 | 64/8/64 | 512 | 512\n"
    "gpu-node-01:41003:41212 [3] NCCL INFO comm 0x55d5c0a0b100 rank 3 nRanks 8 nNodes 1 localRanks 8 "
    "localRank 3 MNNVL 0\n"
    "gpu-node-01:41003:41212 [3] NCCL INFO 2 coll channels, 2 collnet channels, 0 nvls channels, 2 p2p "
    "channels\n"
    "gpu-node-01:41003:41212 [3] NCCL INFO ncclCommInitRank comm 0x55d5c0a0b100 rank 3 nranks 8 cudaDev 3 "
    "nvmlDev 3 "
    "busId 1000 commId 0x9f2b1c3d4e5f6071 - Init COMPLETE\n"
    "gpu-node-01:41003:41212 [3] NCCL INFO P2P Chunksize set to 131072\n"
    "[2025-06-01 12:00:05 TP0] Init torch distributed begin.\n"
    "[2025-06-01 12:09:41 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail "
    "mem=18.12 GB\n"
    "[2025-06-01 12:10:33 TP3] Decode batch. #running-req: 1, #token: 1544, token usage: 0.00, cuda graph: "
    "True\n"
    "[2025-06-01 12:10:34] INFO:     127.0.0.1:50412 - \"POST /generate HTTP/1.1\" 200 OK\n"
    "INFO 06-01 14:00:02 [api_server.py:1395] vLLM API server version 0.10.1\n"
    "(VllmWorker TP0 pid=7101) INFO 06-01 14:08:10 [gpu_model_runner.py:1892] Model loading took 74.12 GiB\n"
    "INFO:     Started server process [4242]\n"
    "INFO:     Waiting for application startup.\n"
    "2025-06-01 12:00:00,123 - root - INFO - step 1234: loss 0.4321, lr 3.0e-05, grad norm 1.02\n"
    "Loading safetensors checkpoint shards:  50% Completed | 32/64 [00:41<00:40,  1.27s/it]\n"
    "WARNING: the current process just got forked, disabling parallelism to avoid deadlocks\n";

/// How often each (lowercased) byte and byte pair occurs in k_ordinary_output.
struct OrdinaryCounts {
    std::array<int, 256> bytes{};
    std::vector<int> pairs = std::vector<int>(1u << 16, 0);
    OrdinaryCounts() {
        for (std::size_t i = 0; i < k_ordinary_output.size(); ++i) {
            const unsigned c = k_lower[static_cast<unsigned char>(k_ordinary_output[i])];
            ++bytes[c];
            if (i + 1 < k_ordinary_output.size())
                ++pairs[(c << 8) | k_lower[static_cast<unsigned char>(k_ordinary_output[i + 1])]];
        }
    }
};

/// The text a pattern matches when it is a plain literal (`NCCL WARN`, `Traceback \(most recent
/// call last\):`), lowercase; nullopt when it has any regex operator, class or escape sequence.
std::optional<std::string> literal_of(std::string_view pattern) {
    bool whole = false;
    std::string text = RulePrefilter::literal_start(pattern, whole);
    if (!whole) return std::nullopt;
    return text;
}

/// The rules FilteredRE2 lets through when exactly `present` atoms are in the text.
std::vector<int> potentials(const re2::FilteredRE2& filter, const std::vector<int>& present) {
    std::vector<int> out;
    filter.AllPotentials(present, &out);
    return out;
}

bool contains(const std::vector<int>& sorted_or_not, int value) {
    return std::find(sorted_or_not.begin(), sorted_or_not.end(), value) != sorted_or_not.end();
}

/// A set of atoms at least one of which is in every line rule `rule` matches (the rule is not
/// unfiltered). First the atoms that let it through alone; when those are not enough (an AND
/// of atoms), atoms are dropped one by one, short ones first, while the rest stays necessary.
std::vector<int> necessary_atoms(const re2::FilteredRE2& filter, int rule,
                                 const std::vector<std::string>& atoms,
                                 const std::vector<std::vector<int>>& alone) {
    const int count = static_cast<int>(atoms.size());
    std::vector<bool> chosen(atoms.size(), false);
    for (int a = 0; a < count; ++a)
        chosen[static_cast<std::size_t>(a)] = contains(alone[static_cast<std::size_t>(a)], rule);
    auto others = [&] {
        std::vector<int> rest;
        for (int a = 0; a < count; ++a)
            if (!chosen[static_cast<std::size_t>(a)]) rest.push_back(a);
        return rest;
    };
    if (contains(potentials(filter, others()), rule)) {
        std::fill(chosen.begin(), chosen.end(), true);
        std::vector<int> order(atoms.size());
        for (int a = 0; a < count; ++a) order[static_cast<std::size_t>(a)] = a;
        std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
            return atoms[static_cast<std::size_t>(x)].size() < atoms[static_cast<std::size_t>(y)].size();
        });
        for (int a : order) {
            chosen[static_cast<std::size_t>(a)] = false;
            if (contains(potentials(filter, others()), rule)) chosen[static_cast<std::size_t>(a)] = true;
        }
    }
    std::vector<int> needed;
    for (int a = 0; a < count; ++a)
        if (chosen[static_cast<std::size_t>(a)]) needed.push_back(a);
    return needed;
}

/// The anchor pair of each atom (its offset), chosen so that few positions of an ordinary line
/// get past the two byte sets scan_wide() tests (the anchors' first bytes, their second bytes):
/// atoms are taken shortest first (they have the fewest pairs to choose from), each at the pair
/// that adds the rarest bytes to those sets, among equals the pair rarest in ordinary output.
std::vector<std::size_t> choose_anchors(const std::vector<std::string>& atoms,
                                        const std::vector<bool>& anchored) {
    const OrdinaryCounts counts;
    std::vector<std::size_t> order;
    for (std::size_t a = 0; a < atoms.size(); ++a)
        if (anchored[a]) order.push_back(a);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return atoms[x].size() < atoms[y].size(); });
    std::array<bool, 256> in_first{}, in_second{};
    std::vector<std::size_t> offsets(atoms.size(), 0);
    for (std::size_t a : order) {
        const std::string& atom = atoms[a];
        long best_added = -1, best_pair = 0;
        for (std::size_t k = 0; k + 1 < atom.size(); ++k) {
            const auto first = static_cast<unsigned char>(atom[k]);
            const auto second = static_cast<unsigned char>(atom[k + 1]);
            const long added = (in_first[first] ? 0 : counts.bytes[first] + 1) +
                               (in_second[second] ? 0 : counts.bytes[second] + 1);
            const long pair = counts.pairs[(static_cast<unsigned>(first) << 8) | second];
            if (best_added < 0 || added < best_added || (added == best_added && pair < best_pair)) {
                best_added = added;
                best_pair = pair;
                offsets[a] = k;
            }
        }
        in_first[static_cast<unsigned char>(atom[offsets[a]])] = true;
        in_second[static_cast<unsigned char>(atom[offsets[a] + 1])] = true;
    }
    return offsets;
}

/// Both cases of an ASCII letter, or the byte itself.
std::vector<unsigned char> cases(unsigned char c) {
    if (c >= 'a' && c <= 'z') return {c, static_cast<unsigned char>(c - 32)};
    return {c};
}

}  // namespace

std::string RulePrefilter::literal_start(std::string_view pattern, bool& whole) {
    static constexpr std::string_view k_operators = ".^$*+?()[]{}|";
    static constexpr std::string_view k_quantifiers = "*+?{";
    whole = false;
    // An alternative (`a|b`) may start with anything: no common start is claimed.
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '\\')
            ++i;
        else if (pattern[i] == '|')
            return {};
    }
    std::string text;
    std::size_t i = 0;
    for (; i < pattern.size(); ++i) {
        const auto c = static_cast<unsigned char>(pattern[i]);
        if (c >= 0x80) break;
        if (c == '\\') {
            if (i + 1 >= pattern.size()) break;
            const auto next = static_cast<unsigned char>(pattern[i + 1]);
            const bool punct =
                next < 0x80 &&
                std::string_view(".^$*+?()[]{}|\\-/:\"' #<>=,!&~@%_;`").find(static_cast<char>(next)) !=
                    std::string_view::npos;
            if (!punct) break;  // \b, \s, \d, \x41, \Q ...: not a plain character
            text += static_cast<char>(k_lower[next]);
            ++i;
            continue;
        }
        if (k_operators.find(static_cast<char>(c)) != std::string_view::npos) {
            if (k_quantifiers.find(static_cast<char>(c)) != std::string_view::npos && !text.empty())
                text.pop_back();  // `ab*`: the b is optional
            break;
        }
        text += static_cast<char>(k_lower[c]);
    }
    whole = i == pattern.size();
    return text;
}

std::unique_ptr<const RulePrefilter> RulePrefilter::build(const std::vector<std::string>& patterns,
                                                          const std::vector<const re2::RE2*>& regexes) {
    if (patterns.empty() || patterns.size() != regexes.size()) return nullptr;
    re2::FilteredRE2 filter(k_min_atom_len);
    RE2::Options options;
    options.set_case_sensitive(false);
    options.set_log_errors(false);
    for (const auto& pattern : patterns) {
        int id = 0;
        if (filter.Add(pattern, options, &id) != RE2::NoError) return nullptr;
    }
    std::vector<std::string> atoms;
    filter.Compile(&atoms);
    if (atoms.size() > k_max_atoms) return nullptr;

    std::unique_ptr<RulePrefilter> prefilter(new RulePrefilter());
    prefilter->m_regexes = regexes;
    prefilter->m_literal.assign(patterns.size(), false);
    std::vector<std::vector<int>> atom_rules(atoms.size());
    const std::vector<int> unfiltered = potentials(filter, {});
    std::vector<std::vector<int>> alone(atoms.size());
    for (std::size_t a = 0; a < atoms.size(); ++a) alone[a] = potentials(filter, {static_cast<int>(a)});
    for (int rule = 0; rule < static_cast<int>(patterns.size()); ++rule) {
        std::vector<int> needed;
        if (!contains(unfiltered, rule)) needed = necessary_atoms(filter, rule, atoms, alone);
        const bool ascii = std::all_of(needed.begin(), needed.end(),
                                       [&](int a) { return is_ascii(atoms[static_cast<std::size_t>(a)]); });
        if (needed.empty() || !ascii) {
            prefilter->m_unfiltered.push_back(rule);
            continue;
        }
        for (int a : needed) atom_rules[static_cast<std::size_t>(a)].push_back(rule);
        const auto literal = literal_of(patterns[static_cast<std::size_t>(rule)]);
        prefilter->m_literal[static_cast<std::size_t>(rule)] =
            literal && needed.size() == 1 && atoms[static_cast<std::size_t>(needed.front())] == *literal;
    }

    // Anchor pairs: each atom that makes a rule a candidate is looked for at its rarest pair.
    prefilter->m_pairs.assign(1u << 16, 0);
    std::map<std::pair<unsigned char, unsigned char>, std::uint8_t> pair_ids;
    std::vector<std::vector<Anchor>> anchors_of;  // pair id - 1 -> the atoms anchored there
    std::vector<bool> anchored(atoms.size());
    for (std::size_t a = 0; a < atoms.size(); ++a) anchored[a] = !atom_rules[a].empty();
    const std::vector<std::size_t> offsets = choose_anchors(atoms, anchored);
    for (std::size_t a = 0; a < atoms.size(); ++a) {
        if (!anchored[a]) continue;
        const std::string& atom = atoms[a];
        if (atom.size() > 0xffff) return nullptr;  // an Anchor's offset is 16 bits
        const std::size_t k = offsets[a];
        const auto first = static_cast<unsigned char>(atom[k]);
        const auto second = static_cast<unsigned char>(atom[k + 1]);
        auto [it, added] =
            pair_ids.try_emplace({first, second}, static_cast<std::uint8_t>(pair_ids.size() + 1));
        if (added) {
            if (pair_ids.size() > k_max_pairs) return nullptr;
            anchors_of.emplace_back();
            for (unsigned char x : cases(first))
                for (unsigned char y : cases(second)) prefilter->m_pairs[(x << 8) | y] = it->second;
            auto& nibbles = prefilter->m_nibbles;
            for (unsigned char x : cases(first)) {
                nibbles[x & 15u] |= static_cast<std::uint8_t>(1u << (x >> 4));
                nibbles[16 + (x >> 4)] = static_cast<std::uint8_t>(1u << (x >> 4));
            }
            for (unsigned char y : cases(second)) {
                nibbles[32 + (y & 15u)] |= static_cast<std::uint8_t>(1u << (y >> 4));
                nibbles[48 + (y >> 4)] = static_cast<std::uint8_t>(1u << (y >> 4));
            }
        }
        anchors_of[it->second - 1u].push_back(Anchor{0, static_cast<std::uint16_t>(a),
                                                     static_cast<std::uint16_t>(k),
                                                     static_cast<std::uint32_t>(atom.size())});
    }
    // Where a rule's matches start: its literal start, when that is an anchored atom.
    prefilter->m_prefix_atom.assign(patterns.size(), -1);
    for (std::size_t rule = 0; rule < patterns.size(); ++rule) {
        bool whole = false;
        const std::string start = literal_start(patterns[rule], whole);
        const auto at = std::find(atoms.begin(), atoms.end(), start);
        if (start.size() >= 2 && at != atoms.end() && anchored[static_cast<std::size_t>(at - atoms.begin())])
            prefilter->m_prefix_atom[rule] = static_cast<int>(at - atoms.begin());
    }
    // The characters RE2 folds onto ASCII letters: U+017F (C5 BF) onto s, U+212A (E2 84 AA) onto k.
    prefilter->m_pairs[(0xC5 << 8) | 0xBF] = k_hazard;
    prefilter->m_pairs[(0xE2 << 8) | 0x84] = k_hazard;
    // Flat arrays for the scan: an atom's words, a pair's anchors, an atom's rules.
    std::vector<std::uint32_t> first_word(atoms.size());
    for (std::size_t a = 0; a < atoms.size(); ++a) {
        const std::string& atom = atoms[a];
        first_word[a] = static_cast<std::uint32_t>(prefilter->m_atom_words.size());
        // Built through memcpy from byte arrays, as the text is read: right on any byte order.
        const std::size_t count = (atom.size() + 7) / 8;
        std::string bytes(8 * count, '\0'), fold(8 * count, '\0'), mask(8 * count, '\0');
        for (std::size_t i = 0; i < atom.size(); ++i) {
            bytes[i] = atom[i];
            fold[i] = atom[i] >= 'a' && atom[i] <= 'z' ? '\x20' : '\0';
            mask[i] = '\xff';
        }
        for (std::size_t w = 0; w < count; ++w) {
            AtomWord word{};
            std::memcpy(&word.bytes, bytes.data() + 8 * w, 8);
            std::memcpy(&word.fold, fold.data() + 8 * w, 8);
            std::memcpy(&word.mask, mask.data() + 8 * w, 8);
            prefilter->m_atom_words.push_back(word);
        }
        const auto begin = static_cast<std::uint32_t>(prefilter->m_rules.size());
        prefilter->m_rules.insert(prefilter->m_rules.end(), atom_rules[a].begin(), atom_rules[a].end());
        prefilter->m_atom_rules.push_back(Span{begin, static_cast<std::uint32_t>(prefilter->m_rules.size())});
    }
    for (auto& anchors : anchors_of) {
        const auto begin = static_cast<std::uint32_t>(prefilter->m_anchors.size());
        for (Anchor anchor : anchors) {
            anchor.word = first_word[anchor.atom];
            prefilter->m_anchors.push_back(anchor);
        }
        prefilter->m_pair_anchors.push_back(
            Span{begin, static_cast<std::uint32_t>(prefilter->m_anchors.size())});
    }
    prefilter->m_atoms = std::move(atoms);
    return prefilter;
}

void RulePrefilter::check_pair(std::string_view line, std::size_t pair_at, unsigned id, Found& found) const {
    const auto* text = reinterpret_cast<const unsigned char*>(line.data());
    const Span span = m_pair_anchors[id - 1u];
    for (std::uint32_t i = span.begin; i < span.end; ++i) {
        const Anchor& anchor = m_anchors[i];
        auto& bits = found.bits[anchor.atom / 64];
        const std::uint64_t bit = std::uint64_t{1} << (anchor.atom % 64);
        if ((bits & bit) != 0 || anchor.offset > pair_at) continue;
        const std::size_t start = pair_at - anchor.offset;
        if (start + anchor.size > line.size()) continue;
        const AtomWord* word = &m_atom_words[anchor.word];
        bool equal = true;
        for (std::size_t at = 0; equal && at < anchor.size; at += 8, ++word) {
            std::uint64_t piece = 0;
            if (start + at + 8 <= line.size())
                std::memcpy(&piece, text + start + at, 8);  // a whole word, masked below
            else
                std::memcpy(&piece, text + start + at, anchor.size - at);  // the line ends in it
            equal = ((piece | word->fold) & word->mask) == word->bytes;
        }
        if (equal) {
            bits |= bit;
            found.first_at[anchor.atom] = static_cast<std::uint32_t>(start);
        }
    }
}

bool RulePrefilter::scan_narrow(std::string_view line, Found& found) const {
    const auto* text = reinterpret_cast<const unsigned char*>(line.data());
    const std::size_t size = line.size();
    if (size < 2) return true;
    const std::uint8_t* pairs = m_pairs.data();
    unsigned previous = text[0];
    for (std::size_t at = 1; at < size; ++at) {
        const unsigned current = text[at];
        const std::uint8_t id = pairs[(previous << 8) | current];
        previous = current;
        if (id == 0) [[likely]]
            continue;
        if (id == k_hazard) {
            if (text[at - 1] == 0xC5 || (at + 1 < size && text[at + 1] == 0xAA)) return false;
            continue;
        }
        check_pair(line, at - 1, id, found);
    }
    return true;
}

#if defined(NCCLSWEEP_PREFILTER_AVX2)
namespace {

/// One of the four nibble tables of RulePrefilter, in both halves of a 256-bit register.
__attribute__((target("avx2"))) inline __m256i nibble_table(const std::uint8_t* table) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
}

/// Which of the 32 bytes at `block` are among the anchors' first bytes (`first`, bit j for byte
/// j) and among their second bytes (`second`); false for a block holding a byte >= 0x80. A byte
/// b is in a set when the set's low-nibble table has, at b & 15, the bit b >> 4 (bytes >= 0x80
/// have high nibbles 8..15, whose entries are 0).
__attribute__((target("avx2"))) inline bool classify(const unsigned char* block, __m256i low_first,
                                                     __m256i high_first, __m256i low_second,
                                                     __m256i high_second, std::uint32_t& first,
                                                     std::uint32_t& second) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
    if (_mm256_movemask_epi8(bytes) != 0) return false;
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i low = _mm256_and_si256(bytes, nibble);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i in_first =
        _mm256_and_si256(_mm256_shuffle_epi8(low_first, low), _mm256_shuffle_epi8(high_first, high));
    const __m256i in_second =
        _mm256_and_si256(_mm256_shuffle_epi8(low_second, low), _mm256_shuffle_epi8(high_second, high));
    first = ~static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(in_first, zero)));
    second = ~static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(in_second, zero)));
    return true;
}

}  // namespace

__attribute__((target("avx2"))) bool RulePrefilter::scan_wide(std::string_view line, Found& found) const {
    const auto* text = reinterpret_cast<const unsigned char*>(line.data());
    const std::size_t size = line.size();
    if (size < 32) return scan_narrow(line, found);  // shorter than one block
    const __m256i low_first = nibble_table(m_nibbles.data());
    const __m256i high_first = nibble_table(m_nibbles.data() + 16);
    const __m256i low_second = nibble_table(m_nibbles.data() + 32);
    const __m256i high_second = nibble_table(m_nibbles.data() + 48);
    // Each byte is classified once; the pair at p is a candidate when byte p is in the first set
    // and byte p + 1 in the second. `carry` says whether the last byte classified is in the
    // first set (its pair ends in the next block).
    std::uint64_t carry = 0;
    for (std::size_t begin = 0; begin < size;) {
        // The last block is placed to end at the line's end and skips the bytes already seen.
        const std::size_t start = begin + 32 <= size ? begin : size - 32;
        std::uint32_t first = 0, second = 0;
        if (!classify(text + start, low_first, high_first, low_second, high_second, first, second))
            return scan_narrow(line, found);  // a byte >= 0x80: folding hazards
        const auto skip = static_cast<unsigned>(begin - start);
        const unsigned count = 32 - skip;  // bytes begin .. begin + count - 1, as bits 0 ..
        const std::uint64_t firsts = std::uint64_t{first} >> skip;
        const std::uint64_t seconds = std::uint64_t{second} >> skip;
        // Bit j: the pair starting at begin - 1 + j (bit 0: the previous block's last byte).
        std::uint64_t candidates = ((firsts << 1) | carry) & seconds;
        carry = (firsts >> (count - 1)) & 1;
        for (; candidates != 0; candidates &= candidates - 1) {
            const std::size_t p = begin - 1 + static_cast<std::size_t>(__builtin_ctzll(candidates));
            const std::uint8_t id = m_pairs[(static_cast<unsigned>(text[p]) << 8) | text[p + 1]];
            if (id != 0) check_pair(line, p, id, found);
        }
        begin += count;
    }
    return true;
}
#else
bool RulePrefilter::scan_wide(std::string_view line, Found& found) const {
    return scan_narrow(line, found);
}
#endif

bool RulePrefilter::scan(std::string_view line, Found& found) const {
#if defined(NCCLSWEEP_PREFILTER_AVX2)
    static const bool k_avx2 = __builtin_cpu_supports("avx2");
    if (k_avx2) return scan_wide(line, found);
#endif
    return scan_narrow(line, found);
}

bool RulePrefilter::match(std::string_view line, std::vector<int>& hits, const std::vector<bool>* unconfirmed,
                          std::vector<std::size_t>* starts) const {
    hits.clear();
    if (starts != nullptr) starts->clear();
    Found found;  // only the words in use are cleared: `rep stos` of all of it costs more than a scan
    const std::size_t words = (m_atoms.size() + 63) / 64;
    for (std::size_t w = 0; w < words; ++w) found.bits[w] = 0;
    if (!scan(line, found)) return false;
    hits.insert(hits.end(), m_unfiltered.begin(), m_unfiltered.end());
    for (std::size_t w = 0; w < words; ++w)
        for (std::uint64_t bits = found.bits[w]; bits != 0; bits &= bits - 1) {
            const Span rules = m_atom_rules[w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))];
            for (std::uint32_t i = rules.begin; i < rules.end; ++i) hits.push_back(m_rules[i]);
        }
    if (hits.empty()) return true;
    if (hits.size() > 1) {  // most lines that hold an atom hold one
        std::sort(hits.begin(), hits.end());
        hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
    }
    const re2::StringPiece text(line.data(), line.size());
    std::erase_if(hits, [&](int rule) {
        const auto r = static_cast<std::size_t>(rule);
        return !m_literal[r] && !(unconfirmed != nullptr && (*unconfirmed)[r]) &&
               !RE2::PartialMatch(text, *m_regexes[r]);
    });
    if (starts != nullptr) {
        for (int rule : hits) {
            const int atom = m_prefix_atom[static_cast<std::size_t>(rule)];
            const bool known =
                atom >= 0 && (found.bits[static_cast<std::size_t>(atom) / 64] >> (atom % 64) & 1) != 0;
            starts->push_back(known ? found.first_at[static_cast<std::size_t>(atom)]
                                    : std::string_view::npos);
        }
    }
    return true;
}

std::size_t RulePrefilter::literal_rules() const {
    return static_cast<std::size_t>(std::count(m_literal.begin(), m_literal.end(), true));
}

}  // namespace ncclsweep::inline watch
