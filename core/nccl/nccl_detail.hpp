#pragma once
#include "core/text.hpp"
// Internals of core/nccl/nccl.cpp: the variable catalog and the NCCL_ALGO/NCCL_PROTO list parser.
// Not a public API; only core/nccl*.cpp and their tests include it.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ncclsweep::nccl::detail {

/// How a variable's value is checked.
enum class Kind {
    algo_list,      ///< NCCL_ALGO: algorithm tokens, per-collective syntax, ^
    proto_list,     ///< NCCL_PROTO: protocol tokens, per-collective syntax, ^
    nthreads,       ///< multiple of 32 in 64..512
    ctas,           ///< 1..64
    path_level,     ///< LOC NVL PIX PXB PHB SYS or an integer 0..5
    boolean,        ///< 0 or 1
    tristate,       ///< 0, 1 or 2
    size,           ///< positive integer; power of two recommended
    count,          ///< non-negative integer
    positive,       ///< integer >= 1
    debug_level,    ///< VERSION WARN INFO TRACE ABORT
    debug_subsys,   ///< comma list of subsystems, optional leading ^
    launch_mode,    ///< PARALLEL GROUP
    socket_family,  ///< AF_INET AF_INET6
    free_text,      ///< any string (paths, interface names, plugin names)
};

/// One known variable.
struct VariableInfo {
    std::string_view name;
    Kind kind;
    std::string_view note;  ///< short remark for docs/messages ("" = none)
};

/// The whole catalog, sorted by name.
const std::vector<VariableInfo>& catalog();
/// The catalog entry for `name`, or nullptr.
const VariableInfo* find_variable(std::string_view name);
/// What values a kind accepts, in words ("0 or 1", "a multiple of 32 in 64..512", ...).
std::string accepted_text(Kind kind);
/// Levenshtein distance (for "did you mean"); shared with the spec parser.
using ncclsweep::edit_distance;

/// The collectives NCCL_ALGO/NCCL_PROTO prefixes may name (NCCL's function list, lower case).
constexpr std::array<std::string_view, 5> k_collectives = {"broadcast", "reduce", "allgather",
                                                           "reducescatter", "allreduce"};
constexpr std::array<std::string_view, 7> k_algorithms = {
    "tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"};
constexpr std::array<std::string_view, 3> k_protocols = {"ll", "ll128", "simple"};

/// Result of parsing an NCCL_ALGO / NCCL_PROTO value the way NCCL does.
struct ParsedList {
    /// enabled[f][e]: element e enabled for collective f (only meaningful where forced[f]).
    std::array<std::vector<bool>, k_collectives.size()> enabled;
    /// forced[f]: the value names collective f (directly or through a prefix-less entry).
    std::array<bool, k_collectives.size()> forced{};
    /// covered[f]: some entry applies to collective f (its list was replaced by the value).
    std::array<bool, k_collectives.size()> covered{};
    /// from_global[f]: the entry that last applied to f was the prefix-less first entry.
    std::array<bool, k_collectives.size()> from_global{};
    /// The value had a prefix-less first entry (applies to every collective).
    bool has_global_entry = false;
};

/// Parses `value` against `elements` (k_algorithms or k_protocols). On failure returns the
/// reason (naming the bad token and what is accepted) in `error`.
std::optional<ParsedList> parse_list(std::string_view value, const std::vector<std::string_view>& elements,
                                     std::string& error);

/// Whether NCCL implements algorithm a (index into k_algorithms) with protocol p for collective f.
bool algo_proto_exists(std::size_t algo, std::size_t proto, std::size_t collective);

/// A value as shown in a message: control and non-ASCII bytes as \xNN, cut after 80 characters.
std::string shown(std::string_view value);

/// Parses a whole decimal (or 0x hex) integer; nullopt on anything else (signs allowed for ints).
std::optional<std::int64_t> parse_integer(std::string_view text);

}  // namespace ncclsweep::nccl::detail
