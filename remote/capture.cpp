#include "remote/capture.hpp"

#include <fmt/format.h>

#include <deque>

namespace ncclsweep::remote {

namespace {

std::string describe_argv(const std::vector<std::string>& argv) {
    std::string text;
    for (const auto& word : argv) {
        if (!text.empty()) text += ' ';
        text += word.size() > 60 ? word.substr(0, 60) + "..." : word;
    }
    return text;
}

}  // namespace

Result<std::string> capture_output(Target& target, const std::vector<std::string>& argv,
                                   std::chrono::seconds timeout) {
    Command command;
    command.argv = argv;
    auto started = target.start(command);
    if (!started) return started.error();
    Process& process = **started;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string out;
    std::deque<std::string> err_tail;
    OutputLine line;
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            process.kill(std::chrono::milliseconds(500));
            return Error::infrastructure(
                fmt::format("{}: '{}' did not finish within {} s; check that the host is responsive",
                            target.describe(), describe_argv(argv), timeout.count()));
        }
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        const PollState state = process.poll(wait, line);
        if (state == PollState::line) {
            if (line.stream == Stream::out) {
                out += line.text;
                out += '\n';
                if (out.size() > k_capture_limit) {
                    process.kill(std::chrono::milliseconds(500));
                    return Error::infrastructure(fmt::format("{}: '{}' printed more than {} bytes",
                                                             target.describe(), describe_argv(argv),
                                                             k_capture_limit));
                }
            } else {
                err_tail.push_back(line.text);
                if (err_tail.size() > 5) err_tail.pop_front();
            }
            continue;
        }
        if (state == PollState::lost) {
            return Error::infrastructure(fmt::format("{}: lost the connection while running '{}': {}",
                                                     target.describe(), describe_argv(argv),
                                                     process.lost_reason()));
        }
        if (state == PollState::exited) break;
    }
    const auto info = process.exit_info();
    if (info && info->success()) return out;
    std::string stderr_text;
    for (const auto& text : err_tail) stderr_text += "\n  " + text;
    const std::string how = !info               ? "ended without a status"
                            : info->signal != 0 ? fmt::format("was killed by signal {}", info->signal)
                                                : fmt::format("exited with status {}", info->exit_code);
    return Error::infrastructure(
        fmt::format("{}: '{}' {}{}", target.describe(), describe_argv(argv), how,
                    stderr_text.empty() ? std::string() : "; stderr:" + stderr_text));
}

}  // namespace ncclsweep::remote
