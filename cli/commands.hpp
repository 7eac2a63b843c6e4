#pragma once
// Registration of subcommands. Each cli/<name>.cpp defines setup_<name>(), which adds its
// CLI::App, stores its options struct, and returns the function that runs it.
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/exit_status.hpp"

namespace ncclsweep::cli {

/// Flags shared by every subcommand.
struct GlobalOptions {
    int verbose = 0;
    bool quiet = false;
};

/// One registered subcommand.
struct Command {
    CLI::App* app = nullptr;
    std::function<ExitStatus()> run;
};
using CommandList = std::vector<Command>;

void setup_global_options(CLI::App& app, GlobalOptions& globals);
void apply_global_options(const GlobalOptions& globals);
void register_commands(CLI::App& app, const GlobalOptions& globals, CommandList& out);

/// A CLI11 check that the value is one of `values`; its message lists them and says "did you
/// mean" for a near miss (core/text's closest_match).
CLI::Validator one_of(std::vector<std::string> values);

/// Prints an Error to stderr and returns its exit status.
ExitStatus report_error(const Error& error);

/// Handles a CLI11 parse error the project's way and returns the process exit status: help
/// and --version print as CLI11 does (0); anything else is one "error: ..." line on stderr
/// (an unknown command or flag with "did you mean", from core/text's closest_match) plus where
/// to read the usage, and exit status 2.
int report_parse_error(CLI::App& app, const CLI::ParseError& error, int argc, char** argv);

// One per subcommand file.
Command setup_plan(CLI::App& app);
Command setup_run(CLI::App& app);
Command setup_watch(CLI::App& app);
Command setup_results(CLI::App& app);
Command setup_diff(CLI::App& app);
Command setup_export(CLI::App& app);
Command setup_report(CLI::App& app);
Command setup_calibrate(CLI::App& app);

}  // namespace ncclsweep::cli
