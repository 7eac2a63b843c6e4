// command_argv: the argv of one experiment. Placeholders {name} resolve against the workload
// parameters given (engine args first, then the experiment's lower_case parameters, which win).
// `{{` and `}}` stand for literal braces. Values never become code: in argv form they are whole
// or partial elements, in a string command they are single-quoted shell words.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/plan/render.hpp"
#include "core/text.hpp"

namespace ncclsweep::inline plan::render {

namespace {

/// Args then params; a param with the name of an earlier entry replaces its value in place.
std::vector<Assignment> merged_params(const WorkloadSpec& workload, const std::vector<Assignment>& params) {
    std::vector<Assignment> merged;
    for (const auto& [name, value] : workload.args) merged.emplace_back(name, value.text);
    for (const auto& param : params) {
        auto it = std::find_if(merged.begin(), merged.end(),
                               [&](const Assignment& a) { return a.first == param.first; });
        if (it != merged.end())
            it->second = param.second;
        else
            merged.push_back(param);
    }
    return merged;
}

bool is_true(const std::string& v) {
    return v == "true" || v == "True" || v == "TRUE";
}
bool is_false(const std::string& v) {
    return v == "false" || v == "False" || v == "FALSE";
}

bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string where(const SourceMark& mark) {
    return mark.line > 0 || !mark.file.empty() ? mark.to_string() + ": " : std::string();
}

/// Replaces placeholders in one element; `quote` wraps each value (identity for argv form).
template <typename Quote>
Result<std::string> substitute(const SpecValue& element, const std::vector<Assignment>& params, Quote quote) {
    const std::string& text = element.text;
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '}') {
            if (i + 1 < text.size() && text[i + 1] == '}') {
                out += '}';
                ++i;
                continue;
            }
            return Error::bad_input(
                fmt::format("{}command \"{}\": a lone '}}' at offset {}; write '}}}}' for a "
                            "literal brace",
                            where(element.mark), text, i));
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < text.size() && text[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        std::size_t close = text.find('}', i + 1);
        std::string name = close == std::string::npos ? std::string() : text.substr(i + 1, close - i - 1);
        if (name.empty() || !std::all_of(name.begin(), name.end(), is_name_char))
            return Error::bad_input(
                fmt::format("{}command \"{}\": '{{' at offset {} does not start a {{name}} "
                            "placeholder; write '{{{{' for a literal brace (e.g. ${{{{HOME}}}} in "
                            "a shell command)",
                            where(element.mark), text, i));
        auto it =
            std::find_if(params.begin(), params.end(), [&](const Assignment& a) { return a.first == name; });
        if (it == params.end()) {
            std::string known;
            for (const auto& [n, v] : params) known += (known.empty() ? "" : ", ") + n;
            std::string hint =
                std::isupper(static_cast<unsigned char>(name[0]))
                    ? " Environment variables reach the command through its environment: in a string "
                      "command write \"$" +
                          name + "\" (escaped as needed), or add a lower_case axis."
                    : "";
            return Error::bad_input(
                fmt::format("{}command placeholder {{{}}} names no workload parameter (known: "
                            "{}).{} Write '{{{{' for a literal brace",
                            where(element.mark), name, known.empty() ? "none" : known, hint));
        }
        out += quote(it->second);
        i = close;
    }
    return out;
}

Result<std::vector<std::string>> engine_argv(const std::vector<Assignment>& params,
                                             const std::string& engine_path, const WorkloadSpec& workload) {
    std::vector<std::string> argv = {engine_path.empty() ? std::string("tpverify") : engine_path, "--json"};
    for (const auto& [name, value] : params) {
        bool valid =
            !name.empty() && std::islower(static_cast<unsigned char>(name[0])) &&
            std::all_of(name.begin(), name.end(), [](char c) { return is_name_char(c) || c == '-'; });
        if (!valid)
            return Error::bad_input(
                fmt::format("{}workload parameter \"{}\" cannot become a tpverify flag; use "
                            "lower_case letters, digits, _ and - (starting with a letter)",
                            where(workload.mark), name));
        if (is_false(value)) continue;
        std::string flag = "--" + name;
        std::replace(flag.begin(), flag.end(), '_', '-');
        argv.push_back(flag);
        if (!is_true(value)) argv.push_back(value);
    }
    return argv;
}

}  // namespace

Result<std::vector<std::string>> command_argv(const WorkloadSpec& workload,
                                              const std::vector<Assignment>& workload_params,
                                              const std::string& engine_path) {
    auto params = merged_params(workload, workload_params);
    if (!workload.engine.empty()) {
        if (workload.engine != "tpverify")
            return Error::bad_input(
                fmt::format("{}workload.engine \"{}\" is unknown; the only engine is tpverify "
                            "(use command: for anything else)",
                            where(workload.mark), workload.engine));
        return engine_argv(params, engine_path, workload);
    }
    if (workload.command.empty())
        return Error::bad_input(fmt::format("{}workload has neither engine: tpverify nor a command:; add one",
                                            where(workload.mark)));
    if (workload.command_is_shell) {
        for (const auto& [name, value] : params)
            if (value.find('\0') != std::string::npos)
                return Error::bad_input(
                    fmt::format("{}parameter {} contains a NUL byte, which no command line can "
                                "carry; remove it",
                                where(workload.mark), name));
        auto script =
            substitute(workload.command.front(), params, [](const std::string& v) { return shell_quote(v); });
        if (!script) return script.error();
        // Values were checked above; a NUL here is in the command text itself (e.g. YAML "\0"),
        // and exec would silently cut the script at it.
        if (script->find('\0') != std::string::npos)
            return Error::bad_input(
                fmt::format("{}the string command contains a NUL byte, which no command line can "
                            "carry; remove it",
                            where(workload.command.front().mark)));
        return std::vector<std::string>{"/bin/sh", "-c", std::move(*script)};
    }
    std::vector<std::string> argv;
    for (const auto& element : workload.command) {
        auto text = substitute(element, params, [](const std::string& v) { return v; });
        if (!text) return text.error();
        const std::string& raw = element.text;
        bool lone_placeholder = raw.size() > 2 && raw.front() == '{' && raw.back() == '}' && raw[1] != '{' &&
                                raw.find('{', 1) == std::string::npos;
        if (lone_placeholder && text->empty()) continue;
        if (text->find('\0') != std::string::npos)
            return Error::bad_input(
                fmt::format("{}command element \"{}\" would contain a NUL byte, which no argv "
                            "can carry; remove it",
                            where(element.mark), raw));
        argv.push_back(std::move(*text));
    }
    if (argv.empty())
        return Error::bad_input(fmt::format(
            "{}command: is empty after substituting parameters; give a program", where(workload.mark)));
    return argv;
}

}  // namespace ncclsweep::inline plan::render
