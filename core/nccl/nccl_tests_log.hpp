#pragma once
// nccl-tests output (all_reduce_perf / all_gather_perf, format of nccl-tests 2.19) and the
// calibration file tpverify's sim reads (--calibration; format in engine/sim/calibration.hpp).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/target.hpp"

namespace ncclsweep::nccl {

/// One nccl-tests run, as its log shows it.
struct NcclTestsLog {
    std::string source;      ///< file name, for messages
    std::string version;     ///< "2.19.6" from "# nccl-tests version ..." ("" when absent)
    std::string collective;  ///< "all_reduce" or "all_gather"
    int nranks = 0;          ///< "#  Rank N ..." lines under "Using devices"
    bool graph = false;      ///< run with -G (CUDA graph launches)
    /// The NCCL setting: NCCL_* variables named in the log ("NCCL_X set by environment to V"
    /// lines of NCCL_DEBUG=INFO, or "NAME=VALUE" words in front of the command on a "$ ..."
    /// line), sorted by name, without the NCCL_DEBUG* ones.
    std::vector<std::pair<std::string, std::string>> setting;
    /// (bytes per rank, out-of-place time in µs). nccl-tests prints all_gather's total
    /// output size; this divides it by the rank count so both collectives count one rank's input.
    std::vector<std::pair<std::uint64_t, double>> points;
};

/// Parses one log; bad input when it is not nccl-tests output of a supported collective.
Result<NcclTestsLog> parse_nccl_tests_log(std::string_view text, const std::string& source);

/// The calibration text for these logs: one table per setting, collective and rank count, after
/// `topology_block` (the machine they were measured on, from topology_block(); may be empty).
/// Two logs with the same setting, collective and rank count are refused (keep one).
Result<std::string> calibration_text(const std::vector<NcclTestsLog>& logs,
                                     std::string_view topology_block = {});

/// The `topology` block of a calibration (engine/sim/calibration.hpp): the machine's
/// `nvidia-smi topo -m` output in `file`, each line behind "| ", after the engine's own reader
/// accepted it (`engine --validate --topology-file FILE`, run on `target`; one reader for the
/// format, tpverify's). bad_input with the engine's "FILE:LINE: ..." when it refuses the file or
/// the file cannot be read; infrastructure error when the engine cannot be asked.
Result<std::string> topology_block(Target& target, const std::string& engine,
                                   const std::filesystem::path& file);

/// Reads every regular file of `dir` (sorted by name) that is nccl-tests output of
/// all_reduce_perf or all_gather_perf; `skipped` gets "FILE: why" for the others.
/// Bad input when none is usable.
Result<std::vector<NcclTestsLog>> read_nccl_tests_dir(const std::filesystem::path& dir,
                                                      std::vector<std::string>& skipped);

}  // namespace ncclsweep::nccl
