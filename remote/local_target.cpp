#include "remote/local_target.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "remote/capture.hpp"
#include "remote/local_process.hpp"

extern char** environ;

namespace ncclsweep::remote {

namespace fs = std::filesystem;

namespace {

bool is_executable_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

Result<std::string> resolve_program(const std::string& name, const std::string& path_value) {
    if (name.find('/') != std::string::npos) return name;
    std::size_t begin = 0;
    for (;;) {
        const std::size_t end = path_value.find(':', begin);
        std::string dir =
            path_value.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
        if (dir.empty()) dir = ".";
        const std::string candidate = dir + "/" + name;
        if (is_executable_file(candidate)) return candidate;
        if (end == std::string::npos) break;
        begin = end + 1;
    }
    return Error::infrastructure(fmt::format(
        "local: program '{}' not found in PATH ({}); install it or give its full path", name, path_value));
}

Result<void> write_all(int fd, const std::string& content, const std::string& path) {
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return Error::infrastructure(
                fmt::format("local: cannot write '{}': {}", path, std::strerror(errno)));
        done += static_cast<std::size_t>(n);
    }
    return success();
}

}  // namespace

Result<void> check_sweep_id(const std::string& id) {
    if (id.empty() || id == "." || id == ".." || id.find('/') != std::string::npos ||
        id.find('\0') != std::string::npos) {
        return Error::bad_input(fmt::format(
            "sweep id '{}' cannot name a work directory (it must be non-empty, without '/', not '.' or '..')",
            id));
    }
    return success();
}

Result<SpawnPlan> make_spawn_plan(const Command& command, const std::string& default_workdir) {
    if (command.argv.empty() || command.argv[0].empty())
        return Error::bad_input("local: empty command: nothing to run");
    std::map<std::string, std::string> env;
    std::vector<std::string> order;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string text = *entry;
        const auto eq = text.find('=');
        if (eq == std::string::npos || eq == 0) continue;
        const std::string name = text.substr(0, eq);
        if (env.emplace(name, text.substr(eq + 1)).second) order.push_back(name);
    }
    for (const auto& [name, value] : command.env) {
        if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
            return Error::bad_input(
                fmt::format("local: '{}' is not a valid environment variable name", name));
        }
        if (value.find('\0') != std::string::npos) {
            return Error::bad_input(fmt::format(
                "local: the value of {} contains a NUL byte, which no environment can carry", name));
        }
        if (env.insert_or_assign(name, value).second) order.push_back(name);
    }
    if (!command.pythonpath_prepend.empty()) {
        auto it = env.find("PYTHONPATH");
        const std::string rest = it == env.end() || it->second.empty() ? std::string() : ":" + it->second;
        if (it == env.end()) order.push_back("PYTHONPATH");
        env["PYTHONPATH"] = command.pythonpath_prepend + rest;
    }
    for (const auto& word : command.argv) {
        if (word.find('\0') != std::string::npos)
            return Error::bad_input("local: a command argument contains a NUL byte");
    }
    SpawnPlan plan;
    const auto path_it = env.find("PATH");
    auto program = resolve_program(command.argv[0],
                                   path_it == env.end() ? "/usr/local/bin:/usr/bin:/bin" : path_it->second);
    if (!program) return program.error();
    plan.program = *program;
    plan.argv = command.argv;
    for (const auto& name : order) plan.envp.push_back(name + "=" + env[name]);
    plan.workdir = command.workdir.empty() ? default_workdir : command.workdir;
    return plan;
}

LocalTarget::LocalTarget(LocalOptions options) : m_options(std::move(options)) {}

std::string LocalTarget::describe() const {
    return "local";
}

Result<std::string> LocalTarget::prepare_workdir(const std::string& sweep_id) {
    if (auto ok = check_sweep_id(sweep_id); !ok) return ok.error();
    const fs::path root =
        m_options.workdir_root.empty() ? fs::path(".ncclsweep/work") : fs::path(m_options.workdir_root);
    std::error_code ec;
    const fs::path dir = fs::absolute(root / sweep_id, ec);
    if (!ec) fs::create_directories(dir, ec);
    if (ec) {
        return Error::infrastructure(fmt::format(
            "local: cannot create work directory '{}': {}; check permissions or set target.workdir",
            (root / sweep_id).string(), ec.message()));
    }
    m_workdir = dir.lexically_normal().string();
    return m_workdir;
}

Result<void> LocalTarget::put_file(const std::string& path, const std::string& content) {
    const fs::path target(path);
    std::error_code ec;
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    if (ec)
        return Error::infrastructure(fmt::format("local: cannot create directory '{}': {}",
                                                 target.parent_path().string(), ec.message()));
    const std::string temp = fmt::format("{}.tmp.{}", path, ::getpid());
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return Error::infrastructure(
            fmt::format("local: cannot create '{}': {}", temp, std::strerror(errno)));
    auto written = write_all(fd, content, temp);
    if (written && ::fsync(fd) != 0)
        written =
            Error::infrastructure(fmt::format("local: cannot flush '{}': {}", temp, std::strerror(errno)));
    ::close(fd);
    if (written && ::rename(temp.c_str(), path.c_str()) != 0) {
        written = Error::infrastructure(
            fmt::format("local: cannot rename '{}' to '{}': {}", temp, path, std::strerror(errno)));
    }
    if (!written) ::unlink(temp.c_str());
    return written;
}

Result<std::unique_ptr<Process>> LocalTarget::start(const Command& command) {
    auto plan = make_spawn_plan(command, m_workdir);
    if (!plan) return plan.error();
    auto process = LocalProcess::spawn(*plan, m_options.process);
    if (!process) return process.error();
    return std::unique_ptr<Process>(std::move(*process));
}

Result<std::string> LocalTarget::capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
    return capture_output(*this, argv, timeout);
}

}  // namespace ncclsweep::remote
