#include "core/plan/key.hpp"

#include <algorithm>
#include <cstdint>

namespace ncclsweep::inline plan {
namespace {

void append_escaped(std::string& out, std::string_view text) {
    for (char c : text) {
        if (c == '\\' || c == '=' || c == ';') out.push_back('\\');
        out.push_back(c);
    }
}

}  // namespace

std::string canonical_text(const std::vector<Assignment>& params) {
    std::vector<const Assignment*> sorted;
    sorted.reserve(params.size());
    for (const auto& param : params) sorted.push_back(&param);
    std::sort(sorted.begin(), sorted.end(), [](const Assignment* a, const Assignment* b) { return *a < *b; });
    std::string out;
    for (const Assignment* param : sorted) {
        if (!out.empty()) out.push_back(';');
        append_escaped(out, param->first);
        out.push_back('=');
        append_escaped(out, param->second);
    }
    return out;
}

std::string key_of_canonical(std::string_view canonical) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (char c : canonical) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 15; i >= 0; --i) {
        out[static_cast<std::size_t>(i)] = k_hex[hash & 0xF];
        hash >>= 4;
    }
    return out;
}

std::string experiment_key(const std::vector<Assignment>& params) {
    return key_of_canonical(canonical_text(params));
}

}  // namespace ncclsweep::inline plan
