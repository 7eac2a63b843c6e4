#pragma once
// Renders an experiment into the forms that reach the workload. Every value is data, never
// code: quotes, newlines, $(...), backticks, NUL-free unicode pass through exactly.
#include <string>
#include <vector>

#include "core/experiment.hpp"
#include "core/result.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline plan::render {

/// Identifies the experiment in rendered files' comments.
struct Provenance {
    std::string sweep;  ///< sweep name
    int experiment_id = 0;
    std::string key;
};

/// What a generated sitecustomize.py leaves behind that it ran.
enum class Evidence {
    none,         ///< nothing (an exported file, deployed outside a sweep)
    marker_file,  ///< one line per interpreter appended to delivery_marker_file() next to it
};

/// The file next to a runner's sitecustomize.py that each interpreter importing it appends one
/// line to, one file per repeat R (NCCLSWEEP_REPEAT; "delivered-R"): `ncclsweep-delivered pgid=G
/// pid=P task=T repeat=R missing=NAMES python=EXE`, and for an error of the sitecustomize it
/// shadows `ncclsweep-chained pgid=G pid=P task=T repeat=R origin=PATH TEXT` (T is the Slurm
/// array task JOB_INDEX or "-"; NAMES the variables it could not set, "-" for none).
[[nodiscard]] std::string delivery_marker_file(int repeat);

/// A sitecustomize.py that sets `env` with os.environ[...] = value (over any inherited value),
/// leaves `evidence` that it ran, then runs the sitecustomize.py it shadows (the next on
/// sys.path, the distribution's included; an error there is shown as its traceback on stderr,
/// and recorded with the evidence). Its own steps never raise. Names the experiment in a
/// comment. Works when imported by every spawned Python child.
std::string sitecustomize(const std::vector<Assignment>& env, const Provenance& provenance,
                          Evidence evidence = Evidence::none);

/// An env file: one `KEY='value'` per line, loadable by `set -a; . file` in sh/bash.
/// Fails (bad_input) for a name that is not a valid variable name or a value with NUL.
Result<std::string> env_file(const std::vector<Assignment>& env, const Provenance& provenance);

/// Quotes a string as a Python string literal (ASCII-only output, \\u escapes).
std::string python_quote(const std::string& value);

/// The command of an experiment: for `engine: tpverify`, [engine_path, "--json", --flag value...]
/// from workload args then lower_case params (params win); for `command:`, the argv with {name}
/// placeholders replaced (an element that is exactly "{name}" with an empty value is dropped),
/// or {"/bin/sh","-c",script} for a string command with placeholders shell-quoted.
/// Fails (bad_input) for a placeholder that names no parameter.
Result<std::vector<std::string>> command_argv(const WorkloadSpec& workload,
                                              const std::vector<Assignment>& workload_params,
                                              const std::string& engine_path);

}  // namespace ncclsweep::inline plan::render
