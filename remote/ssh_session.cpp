#include "remote/ssh_session.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/text.hpp"

namespace ncclsweep::remote {

namespace {

std::string home_dir() {
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return home;
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr) return pw->pw_dir;
    return ".";
}

std::string fingerprint(ssh_session session) {
    ssh_key key = nullptr;
    if (ssh_get_server_publickey(session, &key) != SSH_OK) return "(unknown)";
    unsigned char* hash = nullptr;
    size_t length = 0;
    std::string text = "(unknown)";
    if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &length) == 0) {
        if (char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, length); fp != nullptr) {
            text = fp;
            ssh_string_free_char(fp);
        }
        ssh_clean_pubkey_hash(&hash);
    }
    const char* type = ssh_key_type_to_char(ssh_key_type(key));
    ssh_key_free(key);
    return fmt::format("{} {}", type != nullptr ? type : "key", text);
}

Result<void> verify_host_key(ssh_session session, const std::string& name, const std::string& host_port,
                             const std::string& known_hosts, bool accept_new) {
    const std::string fp = fingerprint(session);
    switch (ssh_session_is_known_server(session)) {
        case SSH_KNOWN_HOSTS_OK:
            return success();
        case SSH_KNOWN_HOSTS_CHANGED:
        case SSH_KNOWN_HOSTS_OTHER:
            return Error::infrastructure(fmt::format(
                "{}: HOST KEY CHANGED: the host now presents {} but {} lists a different key for {}. "
                "This may be an attack (or the host was reinstalled). Nothing was run. If the change is "
                "expected, "
                "remove the old entry (ssh-keygen -R {} -f {}) and connect again with "
                "--accept-new-host-key",
                name, fp, known_hosts, host_port, shell_quote(host_port), shell_quote(known_hosts)));
        case SSH_KNOWN_HOSTS_UNKNOWN:
        case SSH_KNOWN_HOSTS_NOT_FOUND:
            if (!accept_new) {
                return Error::infrastructure(
                    fmt::format("{}: unknown host key {} for {} (not in {}). Check the fingerprint with the "
                                "host's owner, then "
                                "run again with --accept-new-host-key (or add it with ssh-keyscan)",
                                name, fp, host_port, known_hosts));
            }
            {
                std::error_code ec;
                const auto parent = std::filesystem::path(known_hosts).parent_path();
                if (!parent.empty()) std::filesystem::create_directories(parent, ec);
            }
            if (ssh_session_update_known_hosts(session) != SSH_OK) {
                return Error::infrastructure(fmt::format("{}: cannot add the host key to {}: {}", name,
                                                         known_hosts, ssh_get_error(session)));
            }
            return success();
        case SSH_KNOWN_HOSTS_ERROR:
        default:
            return Error::infrastructure(fmt::format("{}: cannot check the host key against {}: {}", name,
                                                     known_hosts, ssh_get_error(session)));
    }
}

Result<void> authenticate(ssh_session session, const std::string& name, const std::string& user,
                          const SshOptions& options) {
    int rc = SSH_AUTH_ERROR;
    std::string tried;
    if (options.identity_file) {
        tried = "identity file " + *options.identity_file;
        ssh_key key = nullptr;
        if (ssh_pki_import_privkey_file(options.identity_file->c_str(), nullptr, nullptr, nullptr, &key) !=
            SSH_OK) {
            return Error::infrastructure(fmt::format(
                "{}: cannot read identity file '{}' (missing, unreadable or passphrase-protected; "
                "load it into ssh-agent instead and leave identity_file unset)",
                name, *options.identity_file));
        }
        rc = ssh_userauth_publickey(session, nullptr, key);
        ssh_key_free(key);
    } else {
        tried = "ssh-agent and the default keys ~/.ssh/id_*";
        rc = ssh_userauth_publickey_auto(session, nullptr, nullptr);
    }
    if (rc == SSH_AUTH_SUCCESS) return success();
    return Error::infrastructure(
        fmt::format("{}: authentication as '{}' failed (tried {}): {}. Add the public key to "
                    "~{}/.ssh/authorized_keys on the host, or set target.identity_file / --identity",
                    name, user, tried, ssh_get_error(session), user));
}

std::string local_user() {
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr) return pw->pw_name;
    return "root";
}

}  // namespace

std::string default_known_hosts() {
    return home_dir() + "/.ssh/known_hosts";
}

Result<std::shared_ptr<SshSession>> SshSession::open(const TargetUrl& url, const SshOptions& options) {
    const std::string name = url.to_string();
    ssh_session session = ssh_new();
    if (session == nullptr) return Error::internal(fmt::format("{}: cannot allocate an ssh session", name));
    const std::string user = url.user.empty() ? local_user() : url.user;
    const std::string known_hosts = options.known_hosts.empty() ? default_known_hosts() : options.known_hosts;
    const long timeout = options.connect_timeout.count();
    const unsigned int port = static_cast<unsigned int>(url.port);
    const int no = 0;
    const int yes = 1;
    ssh_options_set(session, SSH_OPTIONS_PROCESS_CONFIG,
                    &no);  // ~/.ssh/config is not read: the URL says it all
    ssh_options_set(session, SSH_OPTIONS_HOST, url.host.c_str());
    ssh_options_set(session, SSH_OPTIONS_PORT, &port);
    ssh_options_set(session, SSH_OPTIONS_USER, user.c_str());
    ssh_options_set(session, SSH_OPTIONS_KNOWNHOSTS, known_hosts.c_str());
    ssh_options_set(session, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/etc/ssh/ssh_known_hosts");
    ssh_options_set(session, SSH_OPTIONS_TIMEOUT, &timeout);
    ssh_options_set(session, SSH_OPTIONS_NODELAY, &yes);
    auto fail = [&](Error error) {
        ssh_disconnect(session);
        ssh_free(session);
        return error;
    };
    if (ssh_connect(session) != SSH_OK) {
        return fail(Error::infrastructure(
            fmt::format("{}: cannot connect: {}; check that the host is up and sshd listens on port {}", name,
                        ssh_get_error(session), url.port)));
    }
    const std::string host_port = url.port == 22 ? url.host : fmt::format("[{}]:{}", url.host, url.port);
    if (auto ok = verify_host_key(session, name, host_port, known_hosts, options.accept_new_host_key); !ok)
        return fail(ok.error());
    if (auto ok = authenticate(session, name, user, options); !ok) return fail(ok.error());
    // TCP keepalive as well, so a silent network partition is noticed even with no traffic.
    if (const socket_t fd = ssh_get_fd(session); fd >= 0) {
        int idle = 30, interval = 10, count = 3;
        ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &yes, sizeof yes);
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    }
    return std::shared_ptr<SshSession>(new SshSession(session, name, user, options.keepalive_interval));
}

SshSession::SshSession(ssh_session session, std::string name, std::string user,
                       std::chrono::seconds keepalive)
    : m_session(session),
      m_name(std::move(name)),
      m_user(std::move(user)),
      m_keepalive(keepalive),
      m_last_keepalive(std::chrono::steady_clock::now()) {
    m_event = ssh_event_new();
    if (m_event != nullptr && ssh_event_add_session(m_event, m_session) != SSH_OK) {
        ssh_event_free(m_event);
        m_event = nullptr;
    }
}

SshSession::~SshSession() {
    if (m_sftp != nullptr) sftp_free(m_sftp);
    for (sftp_session dead : m_dead_sftp) sftp_free(dead);
    if (m_event != nullptr) {
        ssh_event_remove_session(m_event, m_session);
        ssh_event_free(m_event);
    }
    if (connected()) ssh_disconnect(m_session);
    ssh_free(m_session);
}

bool SshSession::connected() const {
    return ssh_is_connected(m_session) != 0;
}

std::string SshSession::last_error() const {
    return ssh_get_error(m_session);
}

bool SshSession::drop_dead_sftp() {
    if (m_sftp == nullptr) return false;
    // ssh_channel_poll_timeout reads what already arrived (an EOF or close among it) without
    // consuming channel data.
    ssh_channel channel = m_sftp->channel;
    const bool dead = channel == nullptr || ssh_channel_poll_timeout(channel, 0, 0) == SSH_ERROR ||
                      ssh_channel_is_closed(channel) != 0 || ssh_channel_is_eof(channel) != 0;
    if (!dead || !connected()) return false;  // a dead connection is the caller's to report
    // Not freed yet: a file opened on it (an output being followed) may still be closed.
    m_dead_sftp.push_back(m_sftp);
    m_sftp = nullptr;
    ++m_sftp_generation;
    return true;
}

Result<sftp_session> SshSession::sftp() {
    // The subsystem's own process can end while the connection stays up (killed with the
    // session's other children): open a fresh one instead of failing every later transfer.
    drop_dead_sftp();
    if (m_sftp != nullptr) return m_sftp;
    sftp_session sftp = sftp_new(m_session);
    if (sftp == nullptr)
        return Error::infrastructure(
            fmt::format("{}: cannot open an SFTP channel: {}", m_name, last_error()));
    if (sftp_init(sftp) != SSH_OK) {
        const int code = sftp_get_error(sftp);
        sftp_free(sftp);
        return Error::infrastructure(
            fmt::format("{}: SFTP is not available (error {}): {}; enable the sftp subsystem in sshd_config",
                        m_name, code, last_error()));
    }
    m_sftp = sftp;
    return m_sftp;
}

bool SshSession::wait(std::chrono::milliseconds wait) {
    const int ms = static_cast<int>(std::max<std::int64_t>(1, wait.count()));
    if (m_event == nullptr) {
        // No event loop: a plain sleep; reads still process packets when they run.
        ::usleep(static_cast<useconds_t>(ms) * 1000);
        return connected();
    }
    return ssh_event_dopoll(m_event, ms) != SSH_ERROR && connected();
}

bool SshSession::keepalive_if_due() {
    const auto now = std::chrono::steady_clock::now();
    if (now - m_last_keepalive < m_keepalive) return true;
    m_last_keepalive = now;
    return ssh_send_ignore(m_session, "") == SSH_OK && connected();
}

}  // namespace ncclsweep::remote
