#pragma once
// Parses target URLs: "local", "ssh://[user@]host[:port]" (IPv6 hosts in brackets) or
// "slurm://PARTITION".
#include <string>

#include "core/result.hpp"

namespace ncclsweep::remote {

/// A parsed target URL.
struct TargetUrl {
    enum class Kind { local, ssh, slurm };
    Kind kind = Kind::local;
    std::string user;  ///< "" = the local user name (ssh only)
    std::string host;  ///< without brackets; the partition for slurm
    int port = 22;
    /// Canonical text: "local", "ssh://user@host:port" or "slurm://PARTITION".
    [[nodiscard]] std::string to_string() const;
};

/// Parses `url`; bad_input naming the URL and the accepted forms when it is not one of them.
Result<TargetUrl> parse_target_url(const std::string& url);

}  // namespace ncclsweep::remote
