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
    app.footer(
        "Exit status (every command): 0 done, 1 a negative verdict (a regression, a failed run, no\n"
        "experiment ok), 2 bad input (spec, flags, an unknown command; nothing ran), 3 infrastructure\n"
        "(ssh, database, host busy, interrupted). `ncclsweep COMMAND --help` says what each means there.");
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
        return cli::report_parse_error(app, e, argc, argv);
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
