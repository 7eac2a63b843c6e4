// ncclsweep calibrate DIR: nccl-tests logs -> a calibration file for tpverify's sim
// (--calibration). Parses flags; core/nccl/nccl_tests_log does the work.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/spec_flags.hpp"
#include "core/nccl/nccl_tests_log.hpp"

namespace ncclsweep::cli {
namespace {

struct CalibrateOptions {
    std::string dir;
    std::string output;
};

ExitStatus run_calibrate(const CalibrateOptions& options) {
    std::vector<std::string> skipped;
    auto logs = nccl::read_nccl_tests_dir(options.dir, skipped);
    for (const std::string& why : skipped) fmt::print(stderr, "ncclsweep: calibrate: skipped {}\n", why);
    if (!logs) return report_error(logs.error());
    auto text = nccl::calibration_text(*logs);
    if (!text) return report_error(text.error());
    if (auto written = write_output(options.output, *text); !written) return report_error(written.error());
    fmt::print(stderr, "ncclsweep: calibrate: {} table(s) written, one per log\n", logs->size());
    return ExitStatus::done;
}

}  // namespace

Command setup_calibrate(CLI::App& app) {
    auto options = std::make_shared<CalibrateOptions>();
    CLI::App* sub = app.add_subcommand(
        "calibrate",
        "Turn a directory of nccl-tests logs (all_reduce_perf / all_gather_perf output, one file per NCCL\n"
        "setting) into a calibration file for the simulated backend (tpverify --calibration FILE).\n"
        "The setting of a log is read from it: NCCL_DEBUG=INFO's 'NCCL_X set by environment to V'\n"
        "lines, or NAME=VALUE words in front of the command on a '$ ...' line.\n"
        "  ncclsweep calibrate logs/ -o calibration.txt\n"
        "Exit status: 0 written, 2 no usable log or two logs for one setting, 3 file error.\n"
        "See docs/engine.md.");
    sub->add_option("DIR", options->dir, "Directory of nccl-tests logs")->required();
    sub->add_option("-o,--output", options->output, "Write to FILE (atomically) instead of stdout");
    return Command{sub, [options]() { return run_calibrate(*options); }};
}

}  // namespace ncclsweep::cli
