#pragma once
// The sim's NCCL environment parsed from a map of variables, as tpverify parses the process's
// (sim::parse_nccl_env): the one helper of the sim's unit tests.
#include <map>
#include <string>

#include "engine/sim/sim_model.hpp"
#include "tests/support/catch.hpp"

namespace tpverify::sim::testing {

/// The parsed environment of `vars`. Without `warn_out` the parse must succeed (REQUIRE); with
/// it, the parser's warning is stored there and a refused value is the caller's to check.
inline NcclEnv env_of(const std::map<std::string, std::string>& vars, std::string* warn_out = nullptr) {
    NcclEnv env;
    std::string warn;
    const bool ok = parse_nccl_env(
        [&](const char* name) -> const char* {
            auto it = vars.find(name);
            return it == vars.end() ? nullptr : it->second.c_str();
        },
        env, warn);
    if (warn_out)
        *warn_out = warn;
    else
        REQUIRE(ok);
    return env;
}

}  // namespace tpverify::sim::testing
