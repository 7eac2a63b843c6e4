#include "remote/shell_words.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace ncclsweep::remote {

namespace {

bool valid_name(const std::string& name) {
    return !name.empty() && (std::isdigit(static_cast<unsigned char>(name[0])) == 0) &&
           std::all_of(name.begin(), name.end(),
                       [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
}

bool has_nul(const std::string& text) {
    return text.find('\0') != std::string::npos;
}

}  // namespace

Result<std::string> command_script(const Command& command, const std::string& default_workdir, ExecLast exec,
                                   std::string_view who, std::string_view env_options) {
    if (command.argv.empty() || command.argv[0].empty())
        return Error::bad_input(fmt::format("{}: empty command: nothing to run", who));
    std::string env_words;
    bool env_has_pythonpath = false;
    std::string env_pythonpath;
    for (const auto& [name, value] : command.env) {
        if (!valid_name(name))
            return Error::bad_input(fmt::format(
                "{}: '{}' is not a valid environment variable name (letters, digits, '_')", who, name));
        if (has_nul(value))
            return Error::bad_input(fmt::format(
                "{}: the value of {} contains a NUL byte, which no environment can carry", who, name));
        if (name == "PYTHONPATH" && !command.pythonpath_prepend.empty()) {
            env_has_pythonpath = true;
            env_pythonpath = value;
            continue;
        }
        env_words += ' ' + shell_quote(name + "=" + value);
    }
    std::string script;
    const std::string workdir = command.workdir.empty() ? default_workdir : command.workdir;
    if (has_nul(workdir) || has_nul(command.pythonpath_prepend))
        return Error::bad_input(fmt::format("{}: a path contains a NUL byte", who));
    if (!workdir.empty()) script += "cd " + shell_quote(workdir) + " || exit 126; ";
    if (!command.pythonpath_prepend.empty()) {
        if (env_has_pythonpath) {
            const std::string joined =
                command.pythonpath_prepend + (env_pythonpath.empty() ? "" : ":" + env_pythonpath);
            script += "PYTHONPATH=" + shell_quote(joined) + "; ";
        } else {
            script +=
                "PYTHONPATH=" + shell_quote(command.pythonpath_prepend) + "\"${PYTHONPATH:+:$PYTHONPATH}\"; ";
        }
        script += "export PYTHONPATH; ";
    }
    script += exec == ExecLast::yes ? "exec env " : "env ";
    if (!env_options.empty()) script += std::string(env_options) + " ";
    script += "--" + env_words;
    // env takes every NAME=VALUE word before the command as an assignment, `--` included, so a
    // program path with '=' in it (/opt/build=rel/tpverify) would be set as a variable and the
    // next word run instead: such a program is started by sh, as its $0.
    if (command.argv[0].find('=') != std::string::npos) script += " /bin/sh -c 'exec \"$0\" \"$@\"'";
    for (const auto& word : command.argv) {
        if (has_nul(word))
            return Error::bad_input(fmt::format("{}: a command argument contains a NUL byte", who));
        script += ' ' + shell_quote(word);
    }
    return script;
}

}  // namespace ncclsweep::remote
