#include "remote/target_url.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace ncclsweep::remote {

namespace {

Error bad_url(const std::string& url, const std::string& why) {
    return Error::bad_input(fmt::format(
        "target '{}': {}; use 'local', 'ssh://user@host[:port]' or 'slurm://PARTITION'", url, why));
}

bool valid_host(const std::string& host, bool bracketed) {
    if (host.empty() || host.size() > 253) return false;
    return std::all_of(host.begin(), host.end(), [&](unsigned char c) {
        return std::isalnum(c) != 0 || c == '.' || c == '-' || c == '_' ||
               (bracketed && (c == ':' || c == '%'));
    });
}

bool valid_user(const std::string& user) {
    return !user.empty() && user.size() <= 64 && user[0] != '-' &&
           std::all_of(user.begin(), user.end(), [](unsigned char c) {
               return std::isalnum(c) != 0 || c == '.' || c == '-' || c == '_';
           });
}

}  // namespace

std::string TargetUrl::to_string() const {
    if (kind == Kind::local) return "local";
    if (kind == Kind::slurm) return "slurm://" + host;
    const std::string shown_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return fmt::format("ssh://{}{}:{}", user.empty() ? "" : user + "@", shown_host, port);
}

Result<TargetUrl> parse_target_url(const std::string& url) {
    TargetUrl out;
    if (url.empty() || url == "local") return out;
    if (url.compare(0, 8, "slurm://") == 0) {
        out.kind = TargetUrl::Kind::slurm;
        out.host = url.substr(8);
        if (!valid_host(out.host, false))
            return bad_url(
                url,
                fmt::format("'{}' is not a Slurm partition name (letters, digits, '.', '-', '_')", out.host));
        return out;
    }
    const std::string scheme = "ssh://";
    if (url.compare(0, scheme.size(), scheme) != 0) return bad_url(url, "unknown scheme");
    std::string rest = url.substr(scheme.size());
    if (!rest.empty() && rest.back() == '/') rest.pop_back();
    if (rest.find('/') != std::string::npos)
        return bad_url(url, "a path is not allowed (set target.workdir instead)");
    out.kind = TargetUrl::Kind::ssh;
    if (const auto at = rest.rfind('@'); at != std::string::npos) {
        out.user = rest.substr(0, at);
        rest = rest.substr(at + 1);
        if (!valid_user(out.user))
            return bad_url(url, fmt::format("'{}' is not a valid user name", out.user));
    }
    std::string port_text;
    bool bracketed = false;
    if (!rest.empty() && rest[0] == '[') {
        const auto close = rest.find(']');
        if (close == std::string::npos) return bad_url(url, "missing ']' after an IPv6 address");
        out.host = rest.substr(1, close - 1);
        bracketed = true;
        const std::string after = rest.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':') return bad_url(url, "unexpected text after ']'");
            port_text = after.substr(1);
            if (port_text.empty()) return bad_url(url, "empty port");
        }
    } else {
        const auto colon = rest.find(':');
        out.host = rest.substr(0, colon);
        if (colon != std::string::npos) {
            port_text = rest.substr(colon + 1);
            if (port_text.empty()) return bad_url(url, "empty port");
        }
    }
    if (!valid_host(out.host, bracketed))
        return bad_url(url, fmt::format("'{}' is not a valid host name", out.host));
    if (!port_text.empty()) {
        if (port_text.size() > 5 || !std::all_of(port_text.begin(), port_text.end(),
                                                 [](unsigned char c) { return std::isdigit(c) != 0; })) {
            return bad_url(url, fmt::format("port '{}' is not a number", port_text));
        }
        out.port = std::stoi(port_text);
        if (out.port < 1 || out.port > 65535)
            return bad_url(url, fmt::format("port {} is out of range 1..65535", out.port));
    }
    return out;
}

}  // namespace ncclsweep::remote
