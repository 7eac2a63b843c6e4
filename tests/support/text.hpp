#pragma once
// Text checks the tests share (one definition, so that the unity builds of a test folder do
// not meet several).
#include <string_view>

namespace ncclsweep::test {

/// True when `part` occurs in `text`.
[[nodiscard]] inline bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

}  // namespace ncclsweep::test
