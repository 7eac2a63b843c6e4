// Parsing of NCCL_ALGO / NCCL_PROTO values with the rules NCCL itself applies (its parseList):
// entries separated by ';', an optional "collective:" prefix (only the first entry may lack
// one), elements separated by ',', a leading '^' that excludes instead of selecting, tokens
// compared without case and without trimming.
#include <algorithm>
#include <cctype>

#include "core/nccl/nccl_detail.hpp"

namespace ncclsweep::nccl::detail {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

/// Splits on `separator`, dropping empty pieces (NCCL uses strtok, which skips them).
std::vector<std::string_view> split_nonempty(std::string_view text, char separator) {
    std::vector<std::string_view> pieces;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(separator, start);
        if (end == std::string_view::npos) end = text.size();
        if (end > start) pieces.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return pieces;
}

std::string join(const std::vector<std::string_view>& items) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += ", ";
        out += item;
    }
    return out;
}

bool has_space(std::string_view token) {
    return std::any_of(token.begin(), token.end(),
                       [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

/// ", e.g. \"allreduce:tree;allgather:ring\"" when `entry` joins per-collective entries with ','
/// ("allreduce:tree,allgather:ring", which NCCL reads as one entry); "" otherwise.
std::string semicolon_hint(std::string_view entry) {
    std::string fixed(entry);
    bool changed = false;
    for (std::size_t comma = fixed.find(','); comma != std::string::npos;
         comma = fixed.find(',', comma + 1)) {
        auto rest = std::string_view(fixed).substr(comma + 1);
        auto colon = rest.find(':');
        if (colon == std::string_view::npos) continue;
        auto name = rest.substr(0, colon);
        if (std::any_of(k_collectives.begin(), k_collectives.end(),
                        [&](std::string_view c) { return iequals(c, name); })) {
            fixed[comma] = ';';
            changed = true;
        }
    }
    return changed ? ", e.g. \"" + shown(fixed) + "\"" : std::string();
}

}  // namespace

std::optional<ParsedList> parse_list(std::string_view value, const std::vector<std::string_view>& elements,
                                     std::string& error) {
    ParsedList parsed;
    for (auto& list : parsed.enabled) list.assign(elements.size(), false);
    const std::vector<std::string_view> collectives(k_collectives.begin(), k_collectives.end());

    auto entries = split_nonempty(value, ';');
    for (std::size_t index = 0; index < entries.size(); ++index) {
        std::string_view entry = entries[index];
        std::string_view prefix;
        std::string_view list = entry;
        if (auto colon = entry.find(':'); colon != std::string_view::npos) {
            prefix = entry.substr(0, colon);
            list = entry.substr(colon + 1);
            if (prefix.empty()) {
                error = "entry \"" + shown(entry) +
                        "\" has nothing before ':'; write collective:elements, e.g. allreduce:" +
                        std::string(elements.front());
                return std::nullopt;
            }
            if (list.find(':') != std::string_view::npos) {
                error = "entry \"" + shown(entry) + "\" has more than one ':'; separate entries with ';'" +
                        semicolon_hint(entry);
                return std::nullopt;
            }
            if (list.empty()) {
                error = "entry \"" + shown(entry) +
                        "\" names no elements after ':'; accepted elements: " + join(elements);
                return std::nullopt;
            }
        } else if (index > 0) {
            error = "entry \"" + shown(entry) +
                    "\" has no collective prefix; only the first entry may lack one (NCCL rejects this), "
                    "e.g. \"ring;allreduce:tree\"";
            return std::nullopt;
        }

        std::vector<std::size_t> targets;
        if (prefix.empty()) {
            parsed.has_global_entry = true;
            for (std::size_t f = 0; f < collectives.size(); ++f) targets.push_back(f);
        } else {
            for (std::size_t f = 0; f < collectives.size(); ++f)
                if (iequals(prefix, collectives[f])) targets.push_back(f);
            if (targets.empty()) {
                error = "unknown collective \"" + shown(prefix) + "\"";
                if (has_space(prefix)) error += " (NCCL does not strip spaces)";
                if (iequals(prefix, "sendrecv") || iequals(prefix, "send") || iequals(prefix, "recv") ||
                    iequals(prefix, "alltoall"))
                    error +=
                        " (NCCL's per-collective lists cover only the collectives below; "
                        "send/recv traffic is not selected through them)";
                error += "; accepted collectives: " + join(collectives);
                return std::nullopt;
            }
        }

        bool exclude = !list.empty() && list.front() == '^';
        if (exclude) list.remove_prefix(1);
        std::vector<bool> selection(elements.size(), exclude);
        bool matched_any = false;
        for (std::string_view token : split_nonempty(list, ',')) {
            auto it = std::find_if(elements.begin(), elements.end(),
                                   [&](std::string_view e) { return iequals(token, e); });
            if (it == elements.end()) {
                error = "unknown element \"" + shown(token) + "\"";
                if (has_space(token))
                    error += " (NCCL does not strip spaces)";
                else if (token.find('^') != std::string_view::npos)
                    error += " ('^' is allowed only at the start of a list)";
                error += "; accepted: " + join(elements);
                return std::nullopt;
            }
            selection[static_cast<std::size_t>(it - elements.begin())] = !exclude;
            matched_any = true;
        }
        for (std::size_t f : targets) {
            parsed.enabled[f] = selection;
            parsed.covered[f] = true;
            parsed.from_global[f] = prefix.empty();
            if (matched_any) parsed.forced[f] = true;
        }
    }
    return parsed;
}

bool algo_proto_exists(std::size_t algo, std::size_t proto, std::size_t collective) {
    // Collective index order: broadcast, reduce, allgather, reducescatter, allreduce.
    // Which algorithm/protocol pairs NCCL implements per collective (its tuning model table).
    constexpr std::size_t k_simple = 2;
    const std::string_view name = k_algorithms[algo];
    const std::size_t f = collective;
    const bool gather_scatter_reduce = f == 2 || f == 3 || f == 4;
    if (name == "ring") return true;
    if (name == "tree") return f == 4;
    if (proto != k_simple) return false;
    if (name == "collnetdirect" || name == "nvls" || name == "nvlstree") return gather_scatter_reduce;
    if (name == "collnetchain") return f == 4;
    if (name == "pat") return f == 2 || f == 3;
    return false;
}

}  // namespace ncclsweep::nccl::detail
