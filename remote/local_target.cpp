#include "remote/local_target.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "core/log.hpp"
#include "remote/capture.hpp"
#include "remote/local_process.hpp"
#include "remote/workdir_lock.hpp"

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

Result<std::optional<std::string>> read_regular_file(const std::string& path, std::size_t limit,
                                                     const std::string& who) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return std::optional<std::string>();
        return Error::infrastructure(
            fmt::format("{}: cannot open '{}': {}", who, path, std::strerror(errno)));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return Error::infrastructure(fmt::format("{}: '{}' is not a regular file", who, path));
    }
    std::string content;
    char buffer[16384];
    while (content.size() < limit) {
        const ssize_t n = ::read(fd, buffer, std::min(sizeof buffer, limit - content.size()));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int error = errno;
            ::close(fd);
            return Error::infrastructure(
                fmt::format("{}: cannot read '{}': {}", who, path, std::strerror(error)));
        }
        if (n == 0) break;
        content.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return std::optional<std::string>(std::move(content));
}

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
        if (command.pythonpath_prepend.find_first_of(std::string(":\n\0", 3)) != std::string::npos)
            return Error::bad_input(fmt::format(
                "local: the directory '{}' cannot go on PYTHONPATH (':' separates its entries, a newline "
                "or NUL cannot be carried); set target.workdir to a path without them",
                command.pythonpath_prepend));
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

LocalTarget::~LocalTarget() {
    if (m_lock_fd >= 0) ::close(m_lock_fd);  // closing the last descriptor releases the flock
}

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

Result<void> LocalTarget::lock_workdir(const std::string& holder) {
    if (m_workdir.empty()) return Error::internal("local: lock_workdir before prepare_workdir");
    const std::string path = m_workdir + "/" + k_workdir_lock_file;
    if (m_lock_fd >= 0) ::close(m_lock_fd);
    m_lock_fd = -1;
    // O_CLOEXEC: a workload started later must not inherit the lock and hold it after a kill -9
    // of this runner.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return Error::infrastructure(
            fmt::format("local: cannot open the work directory's lock '{}': {}", path, std::strerror(errno)));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        std::string text(4096, '\0');
        const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
        text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        ::close(fd);
        if (error != EWOULDBLOCK)
            return Error::infrastructure(fmt::format("local: cannot lock the work directory '{}': {}",
                                                     m_workdir, std::strerror(error)));
        return Error::infrastructure(fmt::format(
            "local: the work directory {} is in use by {}; two runners of one sweep would overwrite each "
            "other's files: wait for that one to end or stop it (Ctrl-C), then run again",
            m_workdir, describe_lock_holder(text)));
    }
    const std::string text = lock_holder_text(holder);
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
        NCCLSWEEP_LOG(warning, "local: could not write the holder into {}: {}", path, std::strerror(errno));
    m_lock_fd = fd;
    return success();
}

Result<void> LocalTarget::put_file(const std::string& path, const std::string& content) {
    const fs::path target(path);
    std::error_code ec;
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    if (ec)
        return Error::infrastructure(fmt::format("local: cannot create directory '{}': {}",
                                                 target.parent_path().string(), ec.message()));
    // A new file that nobody else made: O_EXCL refuses an existing name and O_NOFOLLOW a link,
    // so a name planted in a shared work directory can neither be truncated nor redirect the write.
    std::string temp = fmt::format("{}.tmp.{}", path, ::getpid());
    int fd = -1;
    std::random_device random;
    for (int tries = 0; tries < 16; ++tries) {
        fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) break;
        temp = fmt::format("{}.tmp.{}.{:08x}", path, ::getpid(), random());
    }
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

Result<std::optional<std::string>> LocalTarget::get_file(const std::string& path, std::size_t limit) {
    return read_regular_file(path, limit, "local");
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
