// ncclsweep: tune NCCL for tensor-parallel inference. One file per subcommand; no logic here.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "core/exit_status.hpp"
#include "core/log.hpp"

int main(int argc, char** argv) {
    using namespace ncclsweep;
    CLI::App app{
        "ncclsweep: sweep NCCL settings for tensor-parallel LLM inference, watch each run live,\n"
        "store the results in SQLite and compare sweeps.\n\n"
        "Typical use:\n"
        "  ncclsweep plan experiments/quickstart.yaml     # show what would run\n"
        "  ncclsweep run experiments/quickstart.yaml      # run it, results in ./ncclsweep.db\n",
        "ncclsweep"};
    app.set_version_flag("--version", std::string("ncclsweep ") + NCCLSWEEP_VERSION);
    app.require_subcommand(1);
    app.fallthrough();
    cli::GlobalOptions globals;
    cli::setup_global_options(app, globals);

    cli::CommandList commands;
    cli::register_commands(app, globals, commands);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : static_cast<int>(ExitStatus::bad_input);
    }
    cli::apply_global_options(globals);
    try {
        for (auto& command : commands)
            if (command.app->parsed()) return static_cast<int>(command.run());
    } catch (const std::exception& e) {
        NCCLSWEEP_LOG(error, "internal error: {}", e.what());
        return static_cast<int>(ExitStatus::infrastructure);
    }
    return static_cast<int>(ExitStatus::bad_input);
}
