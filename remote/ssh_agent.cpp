#include "remote/ssh_agent.hpp"

#include <fmt/format.h>

#include <random>

#include "remote/agent_script.hpp"
#include "remote/sftp_files.hpp"

namespace ncclsweep::remote {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t k_kept_lines = 6;
constexpr std::size_t k_line_limit = 64 * 1024;  ///< longer agent or start-up-file lines are cut

std::string random_nonce() {
    std::random_device device;
    std::mt19937_64 random(static_cast<std::uint64_t>(device()) << 32 | device());
    return fmt::format("{:016x}", random());
}

void keep_line(std::deque<std::string>& lines, std::string line) {
    if (line.size() > 200) line = line.substr(0, 200) + "...";
    lines.push_back(std::move(line));
    if (lines.size() > k_kept_lines) lines.pop_front();
}

std::string quoted_lines(const std::deque<std::string>& lines) {
    std::string text;
    for (const auto& line : lines) text += "\n  " + line;
    return text;
}

bool write_all(ssh_channel channel, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const int n =
            ssh_channel_write(channel, text.data() + done, static_cast<std::uint32_t>(text.size() - done));
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

void SshAgent::on_exit_status(ssh_session, ssh_channel, int status, void* self) {
    static_cast<SshAgent*>(self)->m_exit_status = status;
}

SshAgent::SshAgent(std::shared_ptr<SshSession> session, ssh_channel channel, SshOptions options)
    : m_session(std::move(session)), m_channel(channel), m_options(std::move(options)) {
    m_callbacks.userdata = this;
    m_callbacks.channel_exit_status_function = &SshAgent::on_exit_status;
    ssh_callbacks_init(&m_callbacks);
    ssh_set_channel_callbacks(m_channel, &m_callbacks);
}

SshAgent::~SshAgent() {
    ssh_remove_channel_callbacks(m_channel, &m_callbacks);
    if (m_session->connected()) {
        // The end of its input: the agent ends what it started and removes its spool.
        ssh_channel_send_eof(m_channel);
        ssh_channel_close(m_channel);
    }
    ssh_channel_free(m_channel);
}

Result<std::shared_ptr<SshAgent>> SshAgent::start(std::shared_ptr<SshSession> session,
                                                  const SshOptions& options) {
    const std::string name = session->name();
    if (!session->connected())
        return Error::infrastructure(fmt::format("{}: the connection is closed; reconnect first", name));
    ssh_channel channel = ssh_channel_new(session->raw());
    if (channel == nullptr || ssh_channel_open_session(channel) != SSH_OK) {
        if (channel != nullptr) ssh_channel_free(channel);
        return Error::infrastructure(
            fmt::format("{}: cannot open a channel: {}", name, session->last_error()));
    }
    std::shared_ptr<SshAgent> agent(new SshAgent(session, channel, options));
    const std::string nonce = random_nonce();
    if (ssh_channel_request_exec(channel, k_agent_command) != SSH_OK ||
        !write_all(channel, agent_script(nonce)))
        return agent->not_started(fmt::format("the request failed ({})", session->last_error()), {});
    std::deque<std::string> printed;  // by the login shell's start-up files, before the banner
    const auto deadline = Clock::now() + options.login_timeout;
    for (;;) {
        if (!agent->read_channel())
            return agent->not_started(fmt::format("the connection failed ({})", agent->m_lost_reason),
                                      printed);
        for (std::string line; agent->next_line(line);) {
            if (auto banner = parse_agent_banner(line, nonce)) {
                if (!banner->ready)
                    return Error::infrastructure(fmt::format(
                        "{}: ncclsweep's agent cannot run there: {} is missing (setsid is in util-linux, "
                        "mktemp in coreutils); install it on the host. Nothing was run",
                        name, banner->missing));
                agent->m_banner = *banner;
                return agent;
            }
            keep_line(printed, line);
        }
        if (agent->m_exit_status || ssh_channel_is_eof(channel) != 0 || ssh_channel_is_closed(channel) != 0) {
            session->wait(std::chrono::milliseconds(50));  // the exit status follows the end of file
            const std::string how = agent->m_exit_status
                                        ? fmt::format("it exited with status {}", *agent->m_exit_status)
                                        : std::string("it ended");
            return agent->not_started(how + " before the agent answered", printed);
        }
        if (Clock::now() >= deadline)
            return agent->not_started(
                fmt::format("no answer within {} s (the login shell's start-up files still running, or "
                            "waiting for input)",
                            options.login_timeout.count()),
                printed);
        session->wait(std::chrono::milliseconds(50));
    }
}

Error SshAgent::not_started(const std::string& why, const std::deque<std::string>& printed) {
    m_lost_reason = why;
    const std::string& user = m_session->user();
    const std::string shell = login_shell_of(*m_session, user);
    std::deque<std::string> output = printed;
    for (const auto& line : m_err_tail) keep_line(output, line);
    return Error::infrastructure(fmt::format(
        "{}: the login shell of {}{} did not start ncclsweep's agent: {}. ncclsweep gives the login shell "
        "one fixed line, `{}`, and the agent's source on its standard input; every command of the sweep "
        "then goes to that agent.{}\nNothing was run. Give {} a login shell that runs that line (sh, bash, "
        "dash, zsh, ksh, fish and tcsh do; e.g. chsh -s /bin/bash {}), and keep its start-up files from "
        "reading standard input or waiting for input",
        m_session->name(), user, shell.empty() ? "" : " (" + shell + ")", why, k_agent_command,
        output.empty() ? "" : " What it printed:" + quoted_lines(output), user, user));
}

bool SshAgent::read_channel() {
    char buffer[16 * 1024];
    for (int is_stderr = 0; is_stderr < 2; ++is_stderr) {
        for (;;) {
            const int n = ssh_channel_read_nonblocking(m_channel, buffer, sizeof buffer, is_stderr);
            if (n == SSH_ERROR) {
                mark_lost(m_session->last_error());
                return false;
            }
            if (n <= 0) break;
            if (is_stderr == 0) {
                m_out_text.append(buffer, static_cast<std::size_t>(n));
                continue;
            }
            m_err_text.append(buffer, static_cast<std::size_t>(n));
            for (std::size_t end; (end = m_err_text.find('\n')) != std::string::npos;) {
                keep_line(m_err_tail, m_err_text.substr(0, end));
                m_err_text.erase(0, end + 1);
            }
            if (m_err_text.size() > k_line_limit) m_err_text.clear();
        }
    }
    if (!m_session->connected()) {
        mark_lost(m_session->last_error());
        return false;
    }
    return true;
}

bool SshAgent::next_line(std::string& line) {
    const auto end = m_out_text.find('\n');
    if (end == std::string::npos) {
        if (m_out_text.size() > k_line_limit) m_out_text.clear();  // not the agent's: start-up noise
        return false;
    }
    line = m_out_text.substr(0, end);
    m_out_text.erase(0, end + 1);
    return true;
}

void SshAgent::apply(const std::string& line) {
    const AgentMessage message = parse_agent_message(line);
    if (message.kind == AgentMessage::Kind::pong) {
        m_last_pong = std::max(m_last_pong, message.id);
        return;
    }
    const auto it = m_runs.find(message.id);
    if (it == m_runs.end()) return;
    Run& run = it->second;
    switch (message.kind) {
        case AgentMessage::Kind::started:
            if (message.pgid > 1) run.pgid = message.pgid;  // never a group that means "all"
            break;
        case AgentMessage::Kind::exited:
            run.status = message.status;
            run.group_alive = message.group_alive;
            break;
        case AgentMessage::Kind::killed:
            run.killed = true;
            break;
        default:
            break;
    }
}

void SshAgent::mark_lost(const std::string& reason) {
    if (!m_lost_reason.empty()) return;
    m_lost_reason = reason.empty() ? "closed by the host" : reason;
}

std::string SshAgent::lost_reason() const {
    if (!m_lost_reason.empty()) return m_lost_reason;
    if (!m_session->connected()) return m_session->last_error();
    return {};
}

bool SshAgent::pump() {
    if (!m_lost_reason.empty()) return false;
    if (!read_channel()) return false;
    for (std::string line; next_line(line);) apply(line);
    if (m_exit_status || ssh_channel_is_eof(m_channel) != 0 || ssh_channel_is_closed(m_channel) != 0) {
        mark_lost(fmt::format("ncclsweep's agent on the host ended{}{}",
                              m_exit_status ? fmt::format(" (status {})", *m_exit_status) : std::string(),
                              m_err_tail.empty() ? "" : ": " + m_err_tail.back()));
        return false;
    }
    return true;
}

bool SshAgent::wait(std::chrono::milliseconds wait) {
    if (!m_lost_reason.empty()) return false;
    if (!m_session->wait(wait)) {
        mark_lost(m_session->last_error());
        return false;
    }
    return pump();
}

bool SshAgent::send(const std::string& request) {
    if (!alive()) return false;
    if (write_all(m_channel, request + "\n")) return true;
    mark_lost(m_session->last_error());
    return false;
}

Result<long> SshAgent::run(const std::string& script) {
    if (!pump())
        return Error::infrastructure(
            fmt::format("{}: connection lost: {}", m_session->name(), lost_reason()));
    const long id = ++m_next_id;
    if (auto written = sftp_write_file(*m_session, file_of(id, "sh"), script, 0600); !written)
        return written.error();
    m_runs[id] = Run{};
    if (!send(fmt::format("run {}", id)))
        return Error::infrastructure(
            fmt::format("{}: connection lost: {}", m_session->name(), lost_reason()));
    const auto deadline = Clock::now() + m_options.connect_timeout;
    for (;;) {
        const Run& state = m_runs[id];
        if (state.pgid || state.status) return id;
        if (Clock::now() >= deadline)
            return Error::infrastructure(
                fmt::format("{}: ncclsweep's agent did not start a command within {} s", m_session->name(),
                            m_options.connect_timeout.count()));
        if (!wait(std::chrono::milliseconds(20)))
            return Error::infrastructure(
                fmt::format("{}: connection lost: {}", m_session->name(), lost_reason()));
    }
}

bool SshAgent::round_trip(std::chrono::milliseconds limit) {
    const long id = ++m_next_ping;
    if (!send(fmt::format("ping {}", id))) return false;
    const auto deadline = Clock::now() + limit;
    while (m_last_pong < id) {
        if (Clock::now() >= deadline || !wait(std::chrono::milliseconds(20))) return false;
    }
    return true;
}

const SshAgent::Run* SshAgent::find(long id) const {
    const auto it = m_runs.find(id);
    return it == m_runs.end() ? nullptr : &it->second;
}

void SshAgent::forget(long id) {
    m_runs.erase(id);
    send(fmt::format("forget {}", id));
}

std::string SshAgent::file_of(long id, const char* suffix) const {
    return fmt::format("{}/{}.{}", m_banner.spool, id, suffix);
}

}  // namespace ncclsweep::remote
