// check_value: one NCCL_* variable's value on its own (syntax, range, known risks).
// Facts behind each rule, with NCCL's source files: docs/nccl-validation.md.
#include "core/nccl/nccl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/nccl/nccl_detail.hpp"
#include "core/text.hpp"

namespace ncclsweep::nccl {

namespace detail {

/// A value as it may be shown in a message: control and non-ASCII bytes escaped, long text cut.
std::string shown(std::string_view value) {
    std::string out;
    for (char c : value) {
        auto byte = static_cast<unsigned char>(c);
        if (out.size() >= 80) {
            out += "...";
            break;
        }
        if (byte >= 0x20 && byte < 0x7f)
            out += c;
        else
            out += fmt::format("\\x{:02x}", byte);
    }
    return out;
}

}  // namespace detail

namespace {

using detail::Kind;
using detail::shown;

Finding error(const std::string& name, std::string code, std::string message) {
    return {Severity::error, name, std::move(message), std::move(code)};
}

Finding warning(const std::string& name, std::string code, std::string message) {
    return {Severity::warning, name, std::move(message), std::move(code)};
}

/// Checks integer syntax the way NCCL reads numbers (strtoll, base 0) and returns the value.
std::optional<std::int64_t> checked_integer(const std::string& name, const std::string& value, Kind kind,
                                            std::vector<Finding>& out) {
    std::string_view digits = value;
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
    auto parsed = detail::parse_integer(value);
    if (!parsed) {
        std::string hint;
        if (!value.empty() && std::isdigit(static_cast<unsigned char>(value[0])))
            hint =
                " (NCCL reads only the leading digits and silently ignores the rest, so a unit suffix like "
                "4M "
                "becomes 4; write the plain number of bytes)";
        else if (ascii_upper(value) == "TRUE" || ascii_upper(value) == "YES" || ascii_upper(value) == "ON")
            hint = " (NCCL reads this variable as a number; write 1)";
        else if (ascii_upper(value) == "FALSE" || ascii_upper(value) == "NO" || ascii_upper(value) == "OFF")
            hint = " (NCCL reads this variable as a number; write 0)";
        out.push_back(error(name, "bad-value",
                            fmt::format("{}={} is not an integer{}; accepted: {}", name, shown(value), hint,
                                        detail::accepted_text(kind))));
        return std::nullopt;
    }
    if (digits.size() > 1 && digits[0] == '0' && digits[1] != 'x' && digits[1] != 'X') {
        out.push_back(error(name, "octal",
                            fmt::format("{}={} has a leading 0, which NCCL (strtoll base 0) reads as octal; "
                                        "write it without leading zeros",
                                        name, shown(value))));
        return std::nullopt;
    }
    return parsed;
}

void check_range(const std::string& name, const std::string& value, Kind kind, std::int64_t low,
                 std::int64_t high, std::vector<Finding>& out) {
    auto number = checked_integer(name, value, kind, out);
    if (number && (*number < low || *number > high))
        out.push_back(error(name, "out-of-range",
                            fmt::format("{}={} is out of range; accepted: {}", name, shown(value),
                                        detail::accepted_text(kind))));
}

void check_words(const std::string& name, const std::string& value, Kind kind,
                 const std::vector<std::string_view>& words, bool case_insensitive,
                 std::vector<Finding>& out) {
    for (auto word : words)
        if (value == word) return;
    std::string raised = ascii_upper(value);
    for (auto word : words) {
        if (raised != word) continue;
        if (case_insensitive) return;
        out.push_back(
            error(name, "wrong-case",
                  fmt::format("{}={} must be written in upper case ({}): NCCL compares it exactly and "
                              "would silently fall back to its default",
                              name, shown(value), word)));
        return;
    }
    out.push_back(error(
        name, "bad-value",
        fmt::format("{}={} is not accepted; accepted: {}", name, shown(value), detail::accepted_text(kind))));
}

void check_path_level(const std::string& name, const std::string& value, std::vector<Finding>& out) {
    static const std::vector<std::string_view> k_levels = {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"};
    if (!value.empty() && std::isdigit(static_cast<unsigned char>(value[0]))) {
        check_range(name, value, Kind::path_level, 0, 5, out);
        return;
    }
    check_words(name, value, Kind::path_level, k_levels, false, out);
}

void check_debug_subsys(const std::string& name, const std::string& value, std::vector<Finding>& out) {
    static const std::vector<std::string_view> k_subsystems = {
        "INIT", "COLL",  "P2P",  "SHM",       "NET", "GRAPH",   "TUNING", "ENV", "ALLOC",
        "CALL", "PROXY", "NVLS", "BOOTSTRAP", "REG", "PROFILE", "RAS",    "ALL"};
    std::string_view list = value;
    if (!list.empty() && list.front() == '^') list.remove_prefix(1);
    std::size_t start = 0;
    while (start <= list.size()) {
        std::size_t end = std::min(list.find(',', start), list.size());
        std::string token(list.substr(start, end - start));
        start = end + 1;
        if (token.empty()) continue;
        std::string raised = ascii_upper(token);
        if (std::find(k_subsystems.begin(), k_subsystems.end(), raised) == k_subsystems.end())
            out.push_back(
                warning(name, "unknown-subsys",
                        fmt::format("{}: subsystem \"{}\" is unknown to this validator and NCCL ignores "
                                    "names it does not know; accepted: {}",
                                    name, shown(token), detail::accepted_text(Kind::debug_subsys))));
    }
}

std::string collective_names(const std::vector<std::size_t>& indices) {
    static const std::array<std::string_view, 5> k_display = {"Broadcast", "Reduce", "AllGather",
                                                              "ReduceScatter", "AllReduce"};
    std::string out;
    for (auto f : indices) {
        if (!out.empty()) out += ", ";
        out += k_display[f];
    }
    return out;
}

/// NCCL_ALGO: syntax, then collectives left with no algorithm NCCL implements for them.
void check_algo(const std::string& name, const std::string& value, std::vector<Finding>& out) {
    const std::vector<std::string_view> algos(detail::k_algorithms.begin(), detail::k_algorithms.end());
    std::string reason;
    auto parsed = detail::parse_list(value, algos, reason);
    if (!parsed) {
        out.push_back(error(name, "bad-value", fmt::format("{}={}: {}", name, shown(value), reason)));
        return;
    }
    std::vector<std::size_t> bare_tree, unavailable;
    for (std::size_t f = 0; f < detail::k_collectives.size(); ++f) {
        if (!parsed->covered[f]) continue;
        bool usable = false;
        bool only_tree = true;
        for (std::size_t a = 0; a < algos.size(); ++a) {
            if (!parsed->enabled[f][a]) continue;
            if (algos[a] != "tree") only_tree = false;
            for (std::size_t p = 0; p < detail::k_protocols.size(); ++p)
                usable = usable || detail::algo_proto_exists(a, p, f);
        }
        if (usable) continue;
        if (parsed->from_global[f] && only_tree)
            bare_tree.push_back(f);
        else
            unavailable.push_back(f);
    }
    if (!bare_tree.empty())
        out.push_back(warning(
            name, "bare-tree",
            fmt::format(
                "{}={} applies to every collective, but NCCL implements Tree only for AllReduce: the first "
                "{} fails with \"No algorithm/protocol available ... NCCL_ALGO was set to {}\" "
                "(ncclInvalidUsage), and inside a CUDA-graph capture that invalidates the capture. "
                "Use \"allreduce:tree\" to force Tree for all-reduce only",
                name, shown(value), collective_names(bare_tree), shown(value))));
    if (!unavailable.empty())
        out.push_back(
            warning(name, "algo-unavailable",
                    fmt::format("{}={} leaves no algorithm NCCL implements for {}; the first such call "
                                "fails with \"No algorithm/protocol available\". Add ring for those "
                                "collectives or restrict the value with a prefix such as allreduce:",
                                name, shown(value), collective_names(unavailable))));
}

void check_proto(const std::string& name, const std::string& value, std::vector<Finding>& out) {
    const std::vector<std::string_view> protos(detail::k_protocols.begin(), detail::k_protocols.end());
    std::string reason;
    if (!detail::parse_list(value, protos, reason))
        out.push_back(error(name, "bad-value", fmt::format("{}={}: {}", name, shown(value), reason)));
}

void check_known(const detail::VariableInfo& info, const std::string& name, const std::string& value,
                 std::vector<Finding>& out) {
    switch (info.kind) {
        case Kind::algo_list:
            check_algo(name, value, out);
            break;
        case Kind::proto_list:
            check_proto(name, value, out);
            break;
        case Kind::nthreads: {
            auto number = checked_integer(name, value, info.kind, out);
            if (number && (*number < 64 || *number > 512 || *number % 32 != 0))
                out.push_back(error(name, "out-of-range",
                                    fmt::format("{}={} is not accepted; use {}", name, shown(value),
                                                detail::accepted_text(info.kind))));
            break;
        }
        case Kind::ctas:
            check_range(name, value, info.kind, 1, 64, out);
            break;
        case Kind::path_level:
            check_path_level(name, value, out);
            break;
        case Kind::boolean:
            check_range(name, value, info.kind, 0, 1, out);
            break;
        case Kind::tristate:
            check_range(name, value, info.kind, 0, 2, out);
            break;
        case Kind::count:
            check_range(name, value, info.kind, 0, INT64_MAX, out);
            break;
        case Kind::positive:
            check_range(name, value, info.kind, 1, INT64_MAX, out);
            break;
        case Kind::size: {
            auto number = checked_integer(name, value, info.kind, out);
            if (!number) break;
            if (*number <= 0)
                out.push_back(error(name, "out-of-range",
                                    fmt::format("{}={} must be positive; accepted: {}", name, shown(value),
                                                detail::accepted_text(info.kind))));
            else if ((*number & (*number - 1)) != 0)
                out.push_back(warning(name, "not-power-of-two",
                                      fmt::format("{}={} is not a power of two; NCCL's buffers are normally "
                                                  "powers of two (e.g. 4194304 = 4 MiB)",
                                                  name, shown(value))));
            break;
        }
        case Kind::debug_level:
            check_words(name, value, info.kind, {"VERSION", "WARN", "INFO", "TRACE", "ABORT"}, true, out);
            break;
        case Kind::debug_subsys:
            check_debug_subsys(name, value, out);
            break;
        case Kind::launch_mode:
            check_words(name, value, info.kind, {"PARALLEL", "GROUP"}, false, out);
            break;
        case Kind::socket_family:
            check_words(name, value, info.kind, {"AF_INET", "AF_INET6"}, false, out);
            break;
        case Kind::free_text:
            break;
    }
}

Finding unknown_variable(const std::string& name) {
    std::string raised = ascii_upper(name);
    if (raised != name && detail::find_variable(raised))
        return warning(name, "unknown-var",
                       fmt::format("{} is not an NCCL variable: names are case-sensitive; did you mean {}?",
                                   shown(name), raised));
    std::string_view best;
    std::size_t best_distance = SIZE_MAX;
    for (const auto& info : detail::catalog()) {
        auto distance = detail::edit_distance(raised, info.name);
        if (distance < best_distance) {
            best_distance = distance;
            best = info.name;
        }
    }
    std::size_t limit = std::max<std::size_t>(2, name.size() / 4);
    std::string message =
        fmt::format("{} is not a known NCCL variable, so NCCL would ignore it", shown(name));
    if (best_distance <= limit)
        message += fmt::format("; did you mean {}?", best);
    else
        message += "; check the name against NCCL's environment-variable documentation";
    return warning(name, "unknown-var", std::move(message));
}

}  // namespace

std::vector<Finding> check_value(const std::string& name, const std::string& value) {
    std::vector<Finding> out;
    if (name.rfind("NCCL_", 0) != 0) return out;
    const auto* info = detail::find_variable(name);
    if (!info) {
        out.push_back(unknown_variable(name));
        return out;
    }
    if (value.empty()) {
        out.push_back(
            warning(name, "empty-value",
                    fmt::format("{} is set to an empty string, which NCCL treats as unset; remove it or "
                                "give a value ({})",
                                name, detail::accepted_text(info->kind))));
        return out;
    }
    check_known(*info, name, value, out);
    return out;
}

}  // namespace ncclsweep::nccl
