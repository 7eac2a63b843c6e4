#include "engine/knobs.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

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

}  // namespace tpverify
