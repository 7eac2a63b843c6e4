// ncclsweep watch: run one command (or read one log) under the watcher and print a verdict.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "core/sweep/engine_locator.hpp"
#include "core/watch/echo_buffer.hpp"
#include "core/watch/rule_catalog.hpp"
#include "core/watch/supervise.hpp"
#include "core/watch/watch_report.hpp"
#include "remote/local_target.hpp"
#include "remote/log_follower.hpp"

namespace ncclsweep::cli {
namespace {

/// Writes all of `bytes` to `fd` (a broken stderr loses the echo, not the verdict).
void write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

struct WatchOptions {
    std::vector<std::string> command;
    std::string log_file;
    bool follow = false;
    std::string rules_file;
    bool json = false;
    bool no_echo = false;
    bool expect_result = false;
    Timeouts timeouts{0, 0, 0, 0};
    double kill_grace = 2.0;
};

ExitStatus run_watch(const WatchOptions& options) {
    if (options.command.empty() && options.log_file.empty())
        return report_error(Error::bad_input(
            "watch needs a command after `--` (ncclsweep watch -- python3 -m sglang.launch_server ...) "
            "or --log FILE"));
    if (!options.command.empty() && !options.log_file.empty())
        return report_error(Error::bad_input(
            "watch takes a command after `--` or --log FILE, not both: it watches one process or one log"));
    if (!options.command.empty())
        if (auto runnable = check_local_program(
                options.command.front(), std::getenv("PATH") ? std::getenv("PATH") : "", "the command");
            !runnable)
            return report_error(runnable.error());
    std::vector<Rule> user;
    if (!options.rules_file.empty()) {
        auto loaded = load_rules_file(options.rules_file);
        if (!loaded) return report_error(loaded.error());
        user = std::move(*loaded);
    }
    auto catalog = RuleCatalog::with_user_rules(user);
    if (!catalog) return report_error(catalog.error());

    std::unique_ptr<Process> process;
    remote::LocalTarget local;
    if (!options.log_file.empty()) {
        auto follower = remote::LogFollower::open(options.log_file,
                                                  options.follow ? remote::Follow::yes : remote::Follow::no);
        if (!follower) return report_error(follower.error());
        process = std::move(*follower);
    } else {
        ncclsweep::Command command;
        command.argv = options.command;
        command.workdir = ".";
        auto started = local.start(command);
        if (!started) return report_error(started.error());
        process = std::move(*started);
    }
    WatcherOptions watcher_options;
    watcher_options.timeouts = options.timeouts;
    watcher_options.success = options.expect_result ? SuccessRule::result_event : SuccessRule::exit_zero;
    auto start = std::chrono::steady_clock::now();
    Watcher watcher(*catalog, watcher_options, start);

    const std::atomic<bool>& stop = install_interrupt_handler();
    SuperviseOptions supervise_options;
    supervise_options.kill_grace = std::chrono::milliseconds(static_cast<long>(options.kill_grace * 1000));
    // The echo goes to stderr in large writes: one per chunk of output read, within 0.1 s.
    EchoBuffer echo([](std::string_view bytes) { write_all(STDERR_FILENO, bytes); });
    if (!options.no_echo && !options.json) {
        supervise_options.on_line = [&echo](const OutputLine& line) { echo.add(line); };
        supervise_options.on_idle = [&echo](std::chrono::steady_clock::time_point now) { echo.tick(now); };
    }
    // A followed log has no end of its own: stop once the watcher has a final verdict.
    if (options.follow)
        supervise_options.stop_when = [&watcher]() {
            auto state = watcher.state();
            return state == WatchState::done || watcher.verdict().settled;
        };
    Supervision supervision = supervise(*process, watcher, supervise_options, &stop);
    echo.flush();
    WatchReport report = make_watch_report(watcher, supervision);
    std::string text = options.json ? watch_report_json(report) : watch_report_text(report);
    std::fputs(text.c_str(), stdout);
    if (supervision.end == SupervisionEnd::interrupted) return ExitStatus::negative;
    return report.ok ? ExitStatus::done : ExitStatus::negative;
}

}  // namespace

Command setup_watch(CLI::App& app) {
    auto options = std::make_shared<WatchOptions>();
    CLI::App* sub = app.add_subcommand(
        "watch",
        "Run one command (or read a log) under the watcher and print its verdict.\n"
        "  ncclsweep watch -- python3 -m sglang.launch_server --tp 8 ...\n"
        "  ncclsweep watch --log server.log --follow --json\n"
        "Exit status: 0 ok, 1 failed, timed out or interrupted, 2 bad usage (flags, rules, a command\n"
        "that does not exist or cannot run, a log that cannot be opened), 3 the command could not be\n"
        "started (out of processes or memory).");
    sub->add_option("command", options->command, "Command to run (after --)");
    sub->add_option("--log", options->log_file, "Watch a log file that another process writes");
    sub->add_flag("--follow", options->follow, "With --log: keep reading as the file grows, until a verdict");
    sub->add_option("--rules", options->rules_file, "Extra watcher rules (YAML); see docs/watcher.md");
    sub->add_flag("--json", options->json, "Print the verdict as JSON on stdout");
    sub->add_flag("--no-echo", options->no_echo, "Do not copy the command's output to stderr");
    sub->add_flag("--expect-result", options->expect_result,
                  "A clean exit counts only with a tpverify result event");
    sub->add_option("--startup-timeout", options->timeouts.startup,
                    "Seconds without progress while starting (0 = none)");
    sub->add_option("--capture-timeout", options->timeouts.capture,
                    "Seconds a CUDA graph capture may take (0 = none)");
    sub->add_option("--stall-timeout", options->timeouts.stall, "Seconds without any output (0 = none)");
    sub->add_option("--total-timeout", options->timeouts.total, "Seconds in all (0 = none)");
    sub->add_option("--kill-grace", options->kill_grace, "Seconds between SIGTERM and SIGKILL (default 2)");
    return Command{sub, [options]() { return run_watch(*options); }};
}

}  // namespace ncclsweep::cli
