#pragma once
// capture(): run a short command to completion through any Target's start(), keeping stdout.
#include <chrono>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/target.hpp"

namespace ncclsweep::remote {

/// Largest stdout capture() keeps; more is an error (it is meant for short commands).
inline constexpr std::size_t k_capture_limit = 16 * 1024 * 1024;

/// Starts `argv` on `target`, collects its stdout (lines joined with '\n', each ending in one)
/// until it exits. Fails (infrastructure) when it cannot start, runs past `timeout` (it is then
/// killed), the connection is lost, or it exits non-zero (the message names the host, the
/// command and the last stderr lines).
Result<std::string> capture_output(Target& target, const std::vector<std::string>& argv,
                                   std::chrono::seconds timeout);

}  // namespace ncclsweep::remote
