// tpverify --validate: the run's own checks, without the run (engine/run/validate.hpp).
#include "engine/run/validate.hpp"

#include <regex>

#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/report.hpp"
#include "engine/run/describe.hpp"
#include "engine/topo_matrix.hpp"

namespace tpverify {
namespace {

/// The described parameters a message names as --flag, in order of first mention.
std::vector<std::string> named_parameters(const std::string& message) {
    std::vector<std::string> out;
    static const std::regex flag(R"(--([a-z][a-z0-9-]*))");
    for (auto it = std::sregex_iterator(message.begin(), message.end(), flag); it != std::sregex_iterator();
         ++it) {
        const std::string name = (*it)[1].str();
        bool known = false;
        for (const ParameterSchema& p : parameter_schema()) known = known || p.name == name;
        bool seen = false;
        for (const std::string& n : out) seen = seen || n == name;
        if (known && !seen) out.push_back(name);
    }
    return out;
}

}  // namespace

Verdict validate_args(const std::vector<std::string>& args) {
    std::vector<const char*> argv = {"tpverify"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    const ParseOutcome parsed = parse_options(static_cast<int>(argv.size()), argv.data());
    Verdict v;
    if (parsed.help)
        v.error = "--help is not a parameter";
    else if (!parsed.error.empty())
        v.error = parsed.error;
    else {
        ModelShape model;
        resolve_model(parsed.options, model, v.error);
        const Options& o = parsed.options;
        TopoMatrix matrix;
        std::string error;
        const int ranks = o.nranks > 0 ? o.nranks : o.tp;
        if (v.error.empty() && !o.topology_file.empty()) {
            if (!load_topo_matrix(o.topology_file, matrix, error))
                v.error = "--topology-file: " + error;
            else if (matrix.gpus() < ranks)
                v.error = "--topology-file: " + o.topology_file + ": the matrix has " +
                          std::to_string(matrix.gpus()) + " GPUs and --tp " + std::to_string(ranks) +
                          " needs " + std::to_string(ranks);
        }
    }
    v.valid = v.error.empty();
    if (!v.valid) v.parameters = named_parameters(v.error);
    return v;
}

std::string validate_json(const std::vector<std::vector<std::string>>& lists) {
    std::string out;
    for (const auto& args : lists) {
        const Verdict v = validate_args(args);
        if (v.valid) {
            out += "{\"valid\":true}\n";
            continue;
        }
        std::string names = "[";
        for (std::size_t i = 0; i < v.parameters.size(); ++i)
            names += (i ? "," : "") + json_quote(v.parameters[i]);
        out += "{\"valid\":false,\"error\":" + json_quote(v.error) + ",\"parameters\":" + names + "]}\n";
    }
    return out;
}

}  // namespace tpverify
