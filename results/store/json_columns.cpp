#include "results/store/json_columns.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>

namespace ncclsweep::results::detail {

std::string assignments_to_json(const std::vector<Assignment>& assignments) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& [name, value] : assignments) object[name] = value;
    return object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::vector<Assignment> assignments_from_json(std::string_view text) {
    std::vector<Assignment> assignments;
    const auto object = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!object.is_object()) return assignments;
    assignments.reserve(object.size());
    for (const auto& [name, value] : object.items()) {
        assignments.emplace_back(name, value.is_string() ? value.get<std::string>() : value.dump());
    }
    return assignments;
}

std::string strings_to_json(const std::vector<std::string>& strings) {
    return nlohmann::json(strings).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> strings_from_json(std::string_view text) {
    std::vector<std::string> strings;
    const auto array = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!array.is_array()) return strings;
    strings.reserve(array.size());
    for (const auto& value : array)
        strings.push_back(value.is_string() ? value.get<std::string>() : value.dump());
    return strings;
}

std::string fnv1a_hex(std::string_view text) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return fmt::format("{:016x}", hash);
}

}  // namespace ncclsweep::results::detail
