#include "remote/ssh_process.hpp"

#include <signal.h>

#include <fmt/format.h>

#include <algorithm>

#include "remote/agent_script.hpp"

namespace ncclsweep::remote {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t k_read_chunk = 64 * 1024;

}  // namespace

bool is_teardown_signal(int number) {
    return number == SIGKILL || number == SIGHUP || number == SIGTERM || number == SIGPIPE;
}

SshProcess::SshProcess(std::shared_ptr<SshAgent> agent, long id, const SshOptions& options)
    : m_agent(std::move(agent)),
      m_id(id),
      m_options(options),
      m_out(m_agent->session(), m_agent->file_of(id, "out")),
      m_err(m_agent->session(), m_agent->file_of(id, "err")),
      m_out_splitter(Stream::out, options.process.line_limit),
      m_err_splitter(Stream::err, options.process.line_limit) {
    if (const auto* run = m_agent->find(id)) m_pgid = run->pgid;
}

SshProcess::~SshProcess() {
    if (!m_exit && !m_lost) kill(std::chrono::milliseconds(200));
    m_out.close();
    m_err.close();
    m_agent->forget(m_id);
}

Result<std::unique_ptr<SshProcess>> SshProcess::start(std::shared_ptr<SshAgent> agent,
                                                      const std::string& script, const SshOptions& options) {
    auto id = agent->run(script);
    if (!id) return id.error();
    return std::unique_ptr<SshProcess>(new SshProcess(std::move(agent), *id, options));
}

void SshProcess::mark_lost(const std::string& reason) {
    if (m_lost || m_exit) return;
    m_lost = true;
    m_lost_reason = fmt::format("{}: connection lost: {}", m_agent->session()->name(),
                                reason.empty() ? "closed by the host" : reason);
}

bool SshProcess::read_output(bool& got_data) {
    got_data = false;
    char buffer[k_read_chunk];
    for (SftpTail* tail : {&m_out, &m_err}) {
        const long n = tail->read(buffer, sizeof buffer);
        if (n < 0) {
            mark_lost(m_agent->session()->last_error());
            return false;
        }
        if (n > 0) {
            (tail == &m_out ? m_out_splitter : m_err_splitter)
                .feed(buffer, static_cast<std::size_t>(n), m_lines);
            got_data = true;
        }
    }
    return true;
}

bool SshProcess::read_to_end() {
    for (bool got = true; got;) {
        if (!read_output(got)) return false;
    }
    return true;
}

bool SshProcess::connection_survives(int signal) {
    const auto settle_end = Clock::now() + k_teardown_settle;
    bool alive = true;
    while (alive && Clock::now() < settle_end) alive = m_agent->wait(std::chrono::milliseconds(20));
    // One round trip: an agent whose connection is gone cannot answer.
    alive = alive && m_agent->round_trip(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::seconds(m_options.connect_timeout)));
    if (alive) return true;
    const std::string detail = m_agent->lost_reason();
    mark_lost(
        fmt::format("the command was killed by signal {} and the connection failed right after ({}); a dying "
                    "connection takes its processes with it, so this is not the command's own failure",
                    signal, detail.empty() ? "no answer" : detail));
    return false;
}

void SshProcess::finish(int status) {
    if (!read_to_end()) return;
    const ExitInfo info = exit_info_of_status(status);
    if (info.signal != 0 && !m_signal_sent && is_teardown_signal(info.signal) &&
        !connection_survives(info.signal))
        return;
    m_out_splitter.finish(m_lines);
    m_err_splitter.finish(m_lines);
    m_exit = info;
}

PollState SshProcess::poll(std::chrono::milliseconds wait, OutputLine& line) {
    const auto deadline = Clock::now() + wait;
    for (;;) {
        if (take_line(m_lines, line)) return PollState::line;
        if (m_exit) return PollState::exited;
        if (m_lost) return PollState::lost;
        bool got = false;
        if (!read_output(got)) continue;
        if (got) {
            m_idle_wait = std::chrono::milliseconds(1);
            continue;
        }
        const bool agent_ok = m_agent->pump();
        const SshAgent::Run* run = m_agent->find(m_id);
        if (run != nullptr && run->status) {
            if (!run->group_alive) {
                finish(*run->status);
                continue;
            }
            // The leader ended but others of its group still run (and may still write): read
            // them for the drain grace, then end the group.
            if (!m_status_seen) m_status_seen = Clock::now();
            if (Clock::now() - *m_status_seen >= m_options.process.drain_grace) {
                m_signal_sent = true;
                m_agent->send(fmt::format("signal {} KILL", m_id));
                finish(*run->status);
                continue;
            }
        }
        if (!agent_ok) {
            mark_lost(m_agent->lost_reason());
            continue;
        }
        if (!m_agent->session()->keepalive_if_due()) {
            mark_lost(m_agent->session()->last_error());
            continue;
        }
        const auto now = Clock::now();
        if (now >= deadline) return PollState::timeout;
        // Output is read from files, so nothing wakes this up when a line is written: look
        // again soon after output came, less often while the command is quiet.
        const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        m_agent->wait(std::min(remaining, m_idle_wait));  // a failure shows in the next round
        m_idle_wait = std::min(m_idle_wait * 2, k_output_poll_max);
    }
}

void SshProcess::kill(std::chrono::milliseconds grace) {
    if (m_exit || m_lost) return;
    m_signal_sent = true;
    // The agent does the whole escalation: TERM to the group, up to `grace` for it to empty,
    // then KILL; it answers `killed` when done.
    const long tenths = std::max<long>(1, static_cast<long>((grace.count() + 99) / 100));
    if (!m_agent->send(fmt::format("kill {} {}", m_id, tenths))) {
        mark_lost(m_agent->lost_reason());
        return;
    }
    const auto deadline = Clock::now() + grace + m_options.connect_timeout;
    for (;;) {
        const SshAgent::Run* run = m_agent->find(m_id);
        if (run == nullptr || (run->status && run->killed)) break;
        if (Clock::now() >= deadline) break;
        if (!m_agent->wait(std::chrono::milliseconds(20))) {
            mark_lost(m_agent->lost_reason());
            m_lines.clear();
            return;
        }
    }
    m_lines.clear();  // output not read before the kill is discarded
    const SshAgent::Run* run = m_agent->find(m_id);
    m_exit = run != nullptr && run->status ? exit_info_of_status(*run->status) : ExitInfo{0, SIGKILL};
}

}  // namespace ncclsweep::remote
