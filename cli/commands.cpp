#include "cli/commands.hpp"

#include "core/log.hpp"

namespace ncclsweep::cli {

void setup_global_options(CLI::App& app, GlobalOptions& globals) {
    app.add_flag("-v,--verbose", globals.verbose, "More detail on stderr (repeat for debug)");
    app.add_flag("-q,--quiet", globals.quiet, "Only errors on stderr");
}

void apply_global_options(const GlobalOptions& globals) {
    if (globals.quiet)
        log::set_level(log::Level::error);
    else if (globals.verbose >= 2)
        log::set_level(log::Level::debug);
    else if (globals.verbose == 1)
        log::set_level(log::Level::info);
    else
        log::set_level(log::Level::warning);
}

void register_commands(CLI::App& app, const GlobalOptions&, CommandList& out) {
    out.push_back(setup_plan(app));
    out.push_back(setup_run(app));
    out.push_back(setup_watch(app));
    out.push_back(setup_results(app));
    out.push_back(setup_diff(app));
    out.push_back(setup_export(app));
    out.push_back(setup_report(app));
    out.push_back(setup_calibrate(app));
}

ExitStatus report_error(const Error& error) {
    log::write(log::Level::error, error.message);
    return exit_status_for(error);
}

}  // namespace ncclsweep::cli
