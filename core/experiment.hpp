#pragma once
// One expanded point of a sweep: what to set, what to run, how it is identified.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ncclsweep {

/// NAME=value pair (environment variable or workload parameter).
using Assignment = std::pair<std::string, std::string>;

/// One experiment of a plan. Repeats are samples of it, not extra experiments.
struct Experiment {
    int id = 0;                        ///< 1-based, stable within the sweep (expansion order)
    std::string key;                   ///< canonical key: hash of sorted name=value pairs of `params`
    std::string canonical;             ///< the sorted "a=1;B=2" text the key hashes
    std::vector<Assignment> params;    ///< the point's axis values (env + workload), axis order
    std::vector<Assignment> env;       ///< full environment to set: fixed `env:` + env axes
    std::vector<Assignment> workload;  ///< workload parameters: engine args + lower_case axes
    std::vector<std::string> argv;     ///< the command to run (argv[0] = program)
    bool shell = false;                ///< argv is {"/bin/sh","-c",script}: a string command
    /// NCCL's defaults point: the sweep sweeps NCCL variables and this point sets none of them
    /// (core/plan/baseline.hpp; the planner adds one per combination of the other axes).
    bool defaults = false;
};

}  // namespace ncclsweep
