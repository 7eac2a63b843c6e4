#include "remote/ssh_process.hpp"

#include <poll.h>
#include <signal.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <thread>
#include <utility>

#include "remote/shell_words.hpp"

namespace ncclsweep::remote {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t k_read_chunk = 64 * 1024;

}  // namespace

int signal_number(const std::string& name) {
    static const std::array<std::pair<const char*, int>, 16> table = {{
        {"HUP", SIGHUP},
        {"INT", SIGINT},
        {"QUIT", SIGQUIT},
        {"ILL", SIGILL},
        {"TRAP", SIGTRAP},
        {"ABRT", SIGABRT},
        {"BUS", SIGBUS},
        {"FPE", SIGFPE},
        {"KILL", SIGKILL},
        {"USR1", SIGUSR1},
        {"SEGV", SIGSEGV},
        {"USR2", SIGUSR2},
        {"PIPE", SIGPIPE},
        {"ALRM", SIGALRM},
        {"TERM", SIGTERM},
        {"XCPU", SIGXCPU},
    }};
    for (const auto& [text, number] : table) {
        if (name == text) return number;
    }
    return 0;
}

bool is_teardown_signal(int number) {
    return number == SIGKILL || number == SIGHUP || number == SIGTERM || number == SIGPIPE;
}

void SshProcess::on_exit_status(ssh_session, ssh_channel, int status, void* self) {
    static_cast<SshProcess*>(self)->m_status = status;
}

void SshProcess::on_exit_signal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*,
                                void* self) {
    const int number = signal != nullptr ? signal_number(signal) : 0;
    static_cast<SshProcess*>(self)->m_signal = number != 0 ? number : SIGKILL;
}

SshProcess::SshProcess(std::shared_ptr<SshSession> session, ssh_channel channel, const SshOptions& options)
    : m_session(std::move(session)),
      m_channel(channel),
      m_options(options),
      m_out_splitter(Stream::out, options.process.line_limit),
      m_err_splitter(Stream::err, options.process.line_limit) {
    m_callbacks.userdata = this;
    m_callbacks.channel_exit_status_function = &SshProcess::on_exit_status;
    m_callbacks.channel_exit_signal_function = &SshProcess::on_exit_signal;
    ssh_callbacks_init(&m_callbacks);
    ssh_set_channel_callbacks(m_channel, &m_callbacks);
}

SshProcess::~SshProcess() {
    if (!m_exit && !m_lost) kill(std::chrono::milliseconds(200));
    if (m_channel != nullptr) {
        ssh_remove_channel_callbacks(m_channel, &m_callbacks);
        if (m_session->connected()) ssh_channel_close(m_channel);
        ssh_channel_free(m_channel);
    }
}

Result<std::unique_ptr<SshProcess>> SshProcess::start(std::shared_ptr<SshSession> session,
                                                      const std::string& line, const SshOptions& options) {
    const std::string name = session->name();
    if (!session->connected())
        return Error::infrastructure(fmt::format("{}: the connection is closed; reconnect first", name));
    ssh_channel channel = ssh_channel_new(session->raw());
    if (channel == nullptr || ssh_channel_open_session(channel) != SSH_OK) {
        if (channel != nullptr) ssh_channel_free(channel);
        return Error::infrastructure(
            fmt::format("{}: cannot open a channel: {}", name, session->last_error()));
    }
    std::unique_ptr<SshProcess> process(new SshProcess(session, channel, options));
    if (ssh_channel_request_exec(channel, line.c_str()) != SSH_OK) {
        process->m_lost = true;  // nothing started: no kill in the destructor
        return Error::infrastructure(
            fmt::format("{}: cannot start the command: {}", name, session->last_error()));
    }
    ssh_channel_send_eof(channel);  // stdin: empty, like /dev/null locally
    // The wrapper's first stderr line tells the remote process group.
    const auto deadline = Clock::now() + options.connect_timeout;
    while (Clock::now() < deadline) {
        for (auto it = process->m_lines.begin(); it != process->m_lines.end(); ++it) {
            if (it->stream != Stream::err) continue;
            const std::string marker = k_pgid_marker;
            if (it->text.rfind(marker, 0) == 0) {
                const std::string digits = it->text.substr(marker.size());
                // `kill -TERM -1` would signal every process of the user, `-0` the killer's own
                // group: a group of 1 or less is never taken as the command's.
                if (!digits.empty() && digits.size() < 12 &&
                    std::all_of(digits.begin(), digits.end(), ::isdigit) && std::stol(digits) > 1) {
                    process->m_pgid = std::stol(digits);
                    process->m_lines.erase(it);
                    return process;
                }
            }
            break;  // the first stderr line must be the handshake
        }
        bool got = false;
        if (!process->pump(got)) break;
        if (process->m_eof) break;
        if (!got) process->wait_socket(std::chrono::milliseconds(50));
    }
    std::string detail;
    for (const auto& l : process->m_lines) detail += "\n  " + l.text;
    const bool lost = process->m_lost;
    process->m_lost = true;  // pgid unknown: nothing to kill
    return Error::infrastructure(
        fmt::format("{}: the remote wrapper did not start ({}); the login shell must run "
                    "'exec /bin/sh -c ...'{}",
                    name, lost ? process->m_lost_reason : "no process-group handshake", detail));
}

void SshProcess::mark_lost(const std::string& reason) {
    if (m_lost || m_exit) return;
    m_lost = true;
    m_lost_reason = fmt::format("{}: connection lost: {}", m_session->name(),
                                reason.empty() ? "closed by the host" : reason);
}

bool SshProcess::pump(bool& got_data) {
    got_data = false;
    char buffer[k_read_chunk];
    for (int is_stderr = 0; is_stderr < 2; ++is_stderr) {
        const int n = ssh_channel_read_nonblocking(m_channel, buffer, sizeof buffer, is_stderr);
        if (n > 0) {
            (is_stderr != 0 ? m_err_splitter : m_out_splitter)
                .feed(buffer, static_cast<std::size_t>(n), m_lines);
            got_data = true;
        } else if (n == SSH_ERROR) {
            mark_lost(m_session->last_error());
            return false;
        }
    }
    if (!m_session->connected()) {
        mark_lost(m_session->last_error());
        return false;
    }
    if (!got_data && (ssh_channel_is_eof(m_channel) != 0 || ssh_channel_is_closed(m_channel) != 0))
        m_eof = true;
    if ((m_status || m_signal) && !m_status_seen) m_status_seen = Clock::now();
    return true;
}

bool SshProcess::wait_socket(std::chrono::milliseconds wait) {
    if (!m_session->wait(wait)) {
        mark_lost(m_session->last_error());
        return false;
    }
    return true;
}

void SshProcess::finalize() {
    m_out_splitter.finish(m_lines);
    m_err_splitter.finish(m_lines);
    ExitInfo info;
    if (m_signal)
        info.signal = *m_signal;
    else if (m_status)
        info.exit_code = *m_status;
    m_exit = info;
}

bool SshProcess::connection_survives() {
    m_connection_checked = true;
    const auto settle_end = Clock::now() + k_teardown_settle;
    bool alive = true;
    bool got = false;
    while (alive && Clock::now() < settle_end)
        alive = pump(got) && wait_socket(std::chrono::milliseconds(20));
    if (alive) {
        // One round trip: a host whose sshd is gone cannot open a channel.
        ssh_channel probe = ssh_channel_new(m_session->raw());
        alive = probe != nullptr && ssh_channel_open_session(probe) == SSH_OK;
        if (probe != nullptr) {
            if (alive) ssh_channel_close(probe);
            ssh_channel_free(probe);
        }
        alive = alive && m_session->connected();
    }
    if (alive) return true;
    const std::string detail = m_session->last_error();
    m_lost = false;  // replace pump's bare socket error with the whole story
    mark_lost(
        fmt::format("the command was killed by signal {} and the connection failed right after ({}); a dying "
                    "connection takes its processes with it, so this is not the command's own failure",
                    m_signal.value_or(0), detail.empty() ? "no answer" : detail));
    return false;
}

bool SshProcess::signal_group(const char* signal) {
    if (!m_pgid) return false;
    m_signal_sent = true;
    return run_on_side_channel(fmt::format("kill -{} -{} 2>/dev/null; true", signal, *m_pgid),
                               m_options.connect_timeout);
}

bool SshProcess::run_on_side_channel(const std::string& line, std::chrono::milliseconds limit) {
    if (!m_pgid || *m_pgid <= 1 || !m_session->connected()) return false;
    ssh_channel channel = ssh_channel_new(m_session->raw());
    if (channel == nullptr) return false;
    bool ok = false;
    if (ssh_channel_open_session(channel) == SSH_OK) {
        ok = ssh_channel_request_exec(channel, line.c_str()) == SSH_OK;
        if (ok) {
            ssh_channel_send_eof(channel);
            char sink[256];
            const auto deadline = Clock::now() + limit;
            while (Clock::now() < deadline && ssh_channel_is_eof(channel) == 0 && m_session->connected()) {
                if (ssh_channel_read_timeout(channel, sink, sizeof sink, 0, 100) == SSH_ERROR) break;
            }
        }
        ssh_channel_close(channel);
    }
    ssh_channel_free(channel);
    return ok;
}

PollState SshProcess::poll(std::chrono::milliseconds wait, OutputLine& line) {
    const auto deadline = Clock::now() + wait;
    for (;;) {
        if (!m_lines.empty()) {
            line = std::move(m_lines.front());
            m_lines.pop_front();
            return PollState::line;
        }
        if (m_exit) return PollState::exited;
        if (m_lost) return PollState::lost;
        bool got = false;
        if (!pump(got)) continue;
        if (got) continue;
        if (m_eof) {
            if (m_signal && !m_signal_sent && !m_connection_checked && is_teardown_signal(*m_signal) &&
                !connection_survives()) {
                continue;  // lost
            }
            if (m_status || m_signal) {
                finalize();
            } else if (ssh_channel_is_closed(m_channel) != 0) {
                mark_lost("the channel closed without an exit status");
            } else if (Clock::now() >= deadline) {
                return PollState::timeout;
            } else {
                wait_socket(std::chrono::milliseconds(20));  // the exit status follows the EOF
            }
            continue;
        }
        if (m_status_seen && Clock::now() - *m_status_seen >= m_options.process.drain_grace) {
            // The leader exited but something of its group still holds the output open.
            signal_group("KILL");
            finalize();
            continue;
        }
        if (!m_session->keepalive_if_due()) {
            mark_lost(m_session->last_error());
            continue;
        }
        const auto now = Clock::now();
        if (now >= deadline) return PollState::timeout;
        const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        wait_socket(std::min(remaining, std::chrono::milliseconds(100)));
    }
}

void SshProcess::kill(std::chrono::milliseconds grace) {
    if (m_exit || m_lost) return;
    m_signal_sent = true;
    // One remote shell does the whole escalation (each channel costs a login-shell start):
    // TERM to the group, wait for it to empty (up to grace), then KILL whatever is left.
    const long tenths = std::max<long>(1, static_cast<long>((grace.count() + 99) / 100));
    const std::string script = fmt::format(
        "kill -TERM -{0} 2>/dev/null; i=0; while [ $i -lt {1} ] && kill -0 -{0} 2>/dev/null; do sleep 0.1; "
        "i=$((i+1)); done; "
        "kill -KILL -{0} 2>/dev/null; true",
        *m_pgid, tenths);
    run_on_side_channel("exec /bin/sh -c " + shell_quote(script), grace + m_options.connect_timeout);
    const auto deadline = Clock::now() + m_options.connect_timeout;
    bool got = false;
    while (!m_lost && !(m_status || m_signal) && Clock::now() < deadline) {
        if (!pump(got)) break;
        m_lines.clear();
        if (!got) wait_socket(std::chrono::milliseconds(20));
    }
    m_lines.clear();
    if (m_lost) return;
    if (!m_status && !m_signal) m_signal = SIGKILL;
    finalize();
    m_lines.clear();
}

}  // namespace ncclsweep::remote
