#include "engine/knobs.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tpverify {

namespace {
const char* value_of(const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr || *v == 0 ? nullptr : v;
}
}  // namespace

bool env_is(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, value) == 0;
}

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = value_of(name);
    return v == nullptr ? fallback : std::string(v);
}

int env_int(const char* name, int fallback, int min) {
    const char* v = value_of(name);
    return v == nullptr ? fallback : std::max(min, std::atoi(v));
}

int shape_int(const std::string& text, int n, int k, int fallback, int min) {
    const std::string v = shape_text(text, n, k, "");
    return v.empty() ? fallback : std::max(min, std::atoi(v.c_str()));
}

std::string shape_text(const std::string& text, int n, int k, const std::string& fallback) {
    if (text.empty()) return fallback;
    if (text.find('=') == std::string::npos) return text;
    const std::string shape = std::to_string(n) + "x" + std::to_string(k) + "=";
    for (std::size_t at = 0; at <= text.size();) {
        const std::size_t end = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, end - at);
        if (item.size() > shape.size() && item.compare(0, shape.size(), shape) == 0)
            return item.substr(shape.size());
        at = end + 1;
    }
    return fallback;
}

unsigned name_set(const std::string& text, std::initializer_list<const char*> names, std::string& unknown) {
    unsigned set = 0;
    unknown.clear();
    for (std::size_t at = 0; at <= text.size();) {
        const std::size_t end = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, end - at);
        at = end + 1;
        if (item.empty()) continue;
        unsigned bit = 1;
        bool known = false;
        for (const char* n : names) {
            if (item == n) set |= bit, known = true;
            bit <<= 1;
        }
        if (!known && unknown.empty()) unknown = item;
    }
    return set;
}

}  // namespace tpverify
