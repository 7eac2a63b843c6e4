// SlurmCommands on the login node: each Slurm client command started through a Target
// (LocalTarget: fork/exec, no shell), its stdout and stderr kept.
#include <fmt/format.h>

#include "remote/slurm_target.hpp"

namespace ncclsweep::remote {
namespace {

class LoginNodeCommands final : public SlurmCommands {
public:
    explicit LoginNodeCommands(Target& login) : m_login(login) {}

    Result<Output> run(const std::vector<std::string>& argv) override {
        Command command;
        command.argv = argv;
        auto started = m_login.start(command);
        if (!started) {
            return Error::infrastructure(
                fmt::format("slurm: cannot run {}: {}; is Slurm's client installed "
                            "(slurm-client) and SLURM_CONF set?",
                            argv.front(), started.error().message));
        }
        Process& process = **started;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        Output output;
        OutputLine line;
        for (;;) {
            if (std::chrono::steady_clock::now() >= deadline) {
                process.kill(std::chrono::milliseconds(500));
                return Error::infrastructure(
                    fmt::format("slurm: {} did not answer within 60 s; is slurmctld up?", argv.front()));
            }
            const PollState state = process.poll(std::chrono::milliseconds(200), line);
            if (state == PollState::line) {
                (line.stream == Stream::out ? output.out : output.err) += line.text + "\n";
                continue;
            }
            if (state == PollState::exited) break;
            if (state == PollState::lost)
                return Error::infrastructure(
                    fmt::format("slurm: {}: {}", argv.front(), process.lost_reason()));
        }
        ExitInfo exit = process.exit_info().value_or(ExitInfo{255, 0});
        output.exit_code = exit.signal ? 128 + exit.signal : exit.exit_code;
        return output;
    }

private:
    Target& m_login;
};

}  // namespace

std::unique_ptr<SlurmCommands> login_node_commands(Target& login) {
    return std::make_unique<LoginNodeCommands>(login);
}

}  // namespace ncclsweep::remote
