// ncclsweep calibrate DIR: nccl-tests logs -> a calibration file for tpverify's sim
// (--calibration). Parses flags; core/nccl/nccl_tests_log does the work.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/spec_flags.hpp"
#include "core/nccl/nccl_tests_log.hpp"
#include "core/sweep/engine_locator.hpp"
#include "remote/local_target.hpp"

namespace ncclsweep::cli {
namespace {

struct CalibrateOptions {
    std::string dir;
    std::string output;
    std::string topology_file;
    std::string engine;
};

ExitStatus run_calibrate(const CalibrateOptions& options) {
    std::vector<std::string> skipped;
    auto logs = nccl::read_nccl_tests_dir(options.dir, skipped);
    for (const std::string& why : skipped) fmt::print(stderr, "ncclsweep: calibrate: skipped {}\n", why);
    if (!logs) return report_error(logs.error());
    std::string topology;
    if (!options.topology_file.empty()) {
        remote::LocalTarget local;
        const std::string engine =
            options.engine.empty() ? locate_engine(current_executable()) : options.engine;
        auto block = nccl::topology_block(local, engine, options.topology_file);
        if (!block) return report_error(block.error());
        topology = std::move(*block);
    }
    auto text = nccl::calibration_text(*logs, topology);
    if (!text) return report_error(text.error());
    if (auto written = write_output(options.output, *text); !written) return report_error(written.error());
    fmt::print(stderr, "ncclsweep: calibrate: {} table(s) written, one per log{}\n", logs->size(),
               options.topology_file.empty() ? "" : ", measured on the machine of " + options.topology_file);
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
        "With --topology-file, the machine's `nvidia-smi topo -m` is recorded with the tables.\n"
        "Exit status: 0 written, 2 no usable log, two logs for one setting or a malformed topology\n"
        "file (FILE:LINE), 3 file error.\n"
        "See docs/engine.md.");
    sub->add_option("DIR", options->dir, "Directory of nccl-tests logs")->required();
    sub->add_option("-o,--output", options->output, "Write to FILE (atomically) instead of stdout");
    sub->add_option(
        "--topology-file", options->topology_file,
        "The machine's `nvidia-smi topo -m` output: recorded in the calibration, which then prices\n"
        "only runs on that machine (tpverify --topology-file with the same paths)");
    sub->add_option("--engine", options->engine,
                    "tpverify, to read --topology-file (default: beside ncclsweep)");
    return Command{sub, [options]() { return run_calibrate(*options); }};
}

}  // namespace ncclsweep::cli
