#include "core/spec/spec.hpp"

#include <fmt/format.h>

namespace ncclsweep::inline spec {

std::string SourceMark::to_string() const {
    if (line <= 0) return file;
    return fmt::format("{}:{}:{}", file, line, column);
}

bool Axis::is_env() const {
    // Validated names are either all upper-case (+ digits, '_') or all lower-case; an
    // environment axis has at least one upper-case letter and no lower-case one.
    bool upper = false;
    for (char c : name) {
        if (c >= 'a' && c <= 'z') return false;
        if (c >= 'A' && c <= 'Z') upper = true;
    }
    return upper;
}

}  // namespace ncclsweep::inline spec
