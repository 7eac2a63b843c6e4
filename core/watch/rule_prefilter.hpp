#pragma once
// The literal prefilter in front of the rules' regexes (docs/watcher.md "How a line is judged").
// Every built-in rule, and most user rules, can only match a line that holds one of a few
// literal strings ("atoms": `cuda error:`, `bytes -> algo `, `"event"`, ...), which RE2's
// FilteredRE2 derives from the regex. One scan of the line finds the atoms it holds (a table of
// byte pairs: one load per byte, no per-rule work); only the rules whose atoms were found are
// candidates, a rule that is one literal is confirmed by its atom alone, and the others run
// their own regex. The answer is exactly the rules' own answer — tests compare it with the
// full RE2::Set on every fixture, the adversarial lines and mutated examples.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}  // namespace re2

namespace ncclsweep::inline watch {

/// Candidate rules of a line from the literals their regexes need; confirmed with the regexes.
class RulePrefilter {
public:
    /// Builds the prefilter for `patterns`, compiled case-insensitively as `regexes` (same
    /// order). nullptr when it cannot help exactly: a pattern RE2 cannot prefilter, more
    /// than k_max_atoms atoms or 254 distinct anchor pairs. The caller then uses its RE2::Set.
    static std::unique_ptr<const RulePrefilter> build(const std::vector<std::string>& patterns,
                                                      const std::vector<const re2::RE2*>& regexes);

    /// Indexes of the rules matching `line`, ascending, into `hits` (cleared first). Returns
    /// false, deciding nothing, for a line holding a character that RE2's case folding maps
    /// onto an ASCII letter (U+017F ſ, U+212A Kelvin sign): the caller asks its RE2::Set.
    /// Rules marked in `unconfirmed` (by index; may be null) are returned as candidates when
    /// their atoms are found, without running their regex: the caller runs it anyway.
    /// With `starts`, starts[i] is where the literal every match of rule hits[i] begins with
    /// first occurs in the line (RulePrefilter::literal_start), or npos when not known.
    bool match(std::string_view line, std::vector<int>& hits, const std::vector<bool>* unconfirmed = nullptr,
               std::vector<std::size_t>* starts = nullptr) const;

    /// Rules confirmed by their literal alone (no regex runs for them).
    [[nodiscard]] std::size_t literal_rules() const;
    /// Rules that are candidates on every line (no atom could be derived).
    [[nodiscard]] std::size_t unfiltered_rules() const { return m_unfiltered.size(); }
    /// The atoms, lowercase.
    [[nodiscard]] const std::vector<std::string>& atoms() const { return m_atoms; }

    /// The literal text every match of `pattern` starts with, lowercase ("" when none is
    /// certain); `whole` is set when the pattern is that text and nothing else.
    static std::string literal_start(std::string_view pattern, bool& whole);

    /// Most atoms one prefilter holds.
    static constexpr std::size_t k_max_atoms = 1024;

private:
    /// An atom looked for at one byte pair: where the pair sits in it, and its words.
    struct Anchor {
        std::uint32_t word;    ///< its first word in m_atom_words
        std::uint16_t atom;    ///< index into m_atoms
        std::uint16_t offset;  ///< where the anchor pair sits inside the atom
        std::uint32_t size;    ///< its length in bytes
    };
    /// Eight bytes of an atom (the last word padded with 0), per byte 0x20 for a letter, and
    /// 0xff for a byte of the atom: (text word | fold) & mask equals `bytes` exactly when the
    /// text holds those bytes, ignoring ASCII case.
    struct AtomWord {
        std::uint64_t bytes, fold, mask;
    };
    /// [begin, end) in a flat array.
    struct Span {
        std::uint32_t begin = 0, end = 0;
    };
    /// The atoms a line holds, and where each first starts (set only for atoms found).
    struct Found {
        std::array<std::uint64_t, k_max_atoms / 64> bits;
        std::array<std::uint32_t, k_max_atoms> first_at;
    };
    RulePrefilter() = default;
    /// Marks in `found` the atoms the line holds; false for a line with a folding hazard.
    bool scan(std::string_view line, Found& found) const;
    /// scan() one byte pair at a time, through the pair table.
    bool scan_narrow(std::string_view line, Found& found) const;
    /// scan() 32 bytes at a time (AVX2): only positions whose two bytes are both among the
    /// anchors' first and second bytes reach the pair table. Lines with a byte >= 0x80 go to
    /// scan_narrow().
    bool scan_wide(std::string_view line, Found& found) const;
    /// The atoms anchored at the pair `id` that start at `pair_at - offset`: compared, marked.
    void check_pair(std::string_view line, std::size_t pair_at, unsigned id, Found& found) const;

    std::vector<std::string> m_atoms;
    std::vector<AtomWord> m_atom_words;      ///< every atom's words, one atom after the other
    std::vector<int> m_rules;                ///< atom -> the rules it makes candidates (m_atom_rules)
    std::vector<Span> m_atom_rules;          ///< atom -> its span of m_rules
    std::vector<int> m_unfiltered;           ///< rules without atoms: always candidates
    std::vector<bool> m_literal;             ///< rule -> confirmed by its atom alone
    std::vector<int> m_prefix_atom;          ///< rule -> the anchored atom its matches start with, or -1
    std::vector<const re2::RE2*> m_regexes;  ///< rule -> its regex (owned by the catalog)
    /// Byte pair (first << 8 | second) -> pair id (1 + index into m_pair_anchors), 0 for none;
    /// k_hazard for the first two bytes of a character that folds onto an ASCII letter.
    std::vector<std::uint8_t> m_pairs;
    std::vector<Anchor> m_anchors;     ///< the anchored atoms, grouped by pair
    std::vector<Span> m_pair_anchors;  ///< pair id - 1 -> its span of m_anchors
    /// For scan_wide(): which ASCII bytes start an anchor pair and which end one, as nibble
    /// tables: byte b is in the set when table[b & 15] has bit (b >> 4) set. Four tables of 16:
    /// first bytes by low nibble, by high nibble, then second bytes the same way.
    std::array<std::uint8_t, 64> m_nibbles{};
    static constexpr std::uint8_t k_hazard = 255;
};

}  // namespace ncclsweep::inline watch
