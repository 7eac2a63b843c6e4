#pragma once
// Helpers for end-to-end tests: run the real ncclsweep binary against specs in a temp dir.
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

namespace ncclsweep::test {

/// Runs `ncclsweep args...` with the tpverify of this build and NO_COLOR set.
inline CommandResult run_ncclsweep(const std::vector<std::string>& args,
                                   const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv{binary_path("cli/ncclsweep").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> full_env{"NO_COLOR=1", "NCCLSWEEP_DB="};
    full_env.insert(full_env.end(), env.begin(), env.end());
    return run_command(argv, {}, full_env);
}

/// A spec running the simulated tpverify with the given axes block (YAML, indented 2).
inline std::string sim_spec(const std::string& name, const std::string& axes, int repeats = 1,
                            const std::string& timeouts = "  stall: 3\n  total: 60\n") {
    return "sweep: " + name +
           "\n"
           "target: local\n"
           "workload:\n"
           "  engine: tpverify\n"
           "  args:\n"
           "    backend: sim\n"
           "    topology: pcie-gen5\n"
           "    tp: 8\n"
           "    iters: 5\n"
           "    warmup: 1\n"
           "axes:\n" +
           axes + "repeats: " + std::to_string(repeats) + "\ntimeouts:\n" + timeouts;
}

/// All experiments of the newest sweep in `db`.
inline std::vector<results::StoredExperiment> latest_experiments(const std::string& db) {
    results::StoreOptions options;
    options.access = results::Access::read_only;
    auto store = results::Store::open(db, options);
    if (!store) return {};
    auto id = store->resolve_sweep_ref("latest");
    if (!id) return {};
    auto experiments = store->load_experiments(*id);
    return experiments ? *experiments : std::vector<results::StoredExperiment>{};
}

/// A started ncclsweep whose stdout/stderr go to files; see spawn_ncclsweep / finish().
struct SpawnedRun {
    pid_t pid = -1;
    std::filesystem::path out_file;
    std::filesystem::path err_file;
};

/// Starts `ncclsweep args...` in the background (output to files in `dir`) and returns at once.
inline SpawnedRun spawn_ncclsweep(const std::filesystem::path& dir, const std::vector<std::string>& args,
                                  const std::string& label = "run") {
    SpawnedRun run{-1, dir / (label + ".out"), dir / (label + ".err")};
    std::vector<std::string> argv{binary_path("cli/ncclsweep").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = ::fork();
    if (pid == 0) {
        int out = ::open(run.out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = ::open(run.err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null_in = ::open("/dev/null", O_RDONLY);
        ::dup2(null_in, 0);
        ::dup2(out, 1);
        ::dup2(err, 2);
        ::setenv("NO_COLOR", "1", 1);
        ::setenv("NCCLSWEEP_DB", "", 1);
        std::vector<char*> cargv;
        for (auto& a : argv) cargv.push_back(a.data());
        cargv.push_back(nullptr);
        ::execv(cargv[0], cargv.data());
        ::_exit(127);
    }
    run.pid = pid;
    return run;
}

/// How a spawned ncclsweep ended, with its peak resident memory.
struct FinishedRun {
    int exit_code = -1;     ///< exit status, or 128+signal
    long peak_rss_kb = -1;  ///< ru_maxrss from wait4: ncclsweep's peak (or a reaped descendant's, if larger)
    std::string out;
    std::string err;
};

/// Waits for a spawned run and reaps it. (A zombie's /proc/PID/status has no Vm* lines any
/// more, so the peak comes from wait4's rusage, an upper bound of ncclsweep's own VmHWM.)
inline FinishedRun finish(const SpawnedRun& run) {
    FinishedRun result;
    int wstatus = 0;
    struct rusage usage {};
    while (::wait4(run.pid, &wstatus, 0, &usage) < 0 && errno == EINTR) {
    }
    result.peak_rss_kb = usage.ru_maxrss;
    result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    result.out = read_file(run.out_file);
    result.err = read_file(run.err_file);
    return result;
}

/// Rows of `sql` on the SQLite file `db` (every column as text; NULL as ""); one row
/// {"ERROR: ..."} when the query fails.
inline std::vector<std::vector<std::string>> sqlite_rows(const std::string& db, const std::string& sql) {
    std::vector<std::vector<std::string>> rows;
    sqlite3* handle = nullptr;
    if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        rows.push_back({std::string("ERROR: ") + sqlite3_errmsg(handle)});
        sqlite3_close(handle);
        return rows;
    }
    sqlite3_busy_timeout(handle, 5000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(handle, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
        rows.push_back({std::string("ERROR: ") + sqlite3_errmsg(handle)});
        sqlite3_close(handle);
        return rows;
    }
    int rc = 0;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        std::vector<std::string> row;
        for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
            const auto* text = sqlite3_column_text(stmt, i);
            row.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
        }
        rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) rows.push_back({std::string("ERROR: ") + sqlite3_errmsg(handle)});
    sqlite3_finalize(stmt);
    sqlite3_close(handle);
    return rows;
}

/// `PRAGMA integrity_check` of `db`: "ok" for a sound file.
inline std::string integrity_check(const std::string& db) {
    auto rows = sqlite_rows(db, "PRAGMA integrity_check");
    return rows.empty() || rows[0].empty() ? "" : rows[0][0];
}

/// A throwaway sshd on 127.0.0.1 (scripts/test-sshd.sh) for one test; `available` is false
/// (with a SKIPPED warning) when sshd is not installed.
struct TestSshd {
    TempDir dir;
    int port = 0;
    bool available = false;
    TestSshd() { available = start(""); }
    ~TestSshd() { stop(); }
    TestSshd(const TestSshd&) = delete;
    TestSshd& operator=(const TestSshd&) = delete;
    /// Starts the server (on `fixed_port` when given); false when sshd is missing.
    bool start(const std::string& fixed_port) {
        std::vector<std::string> argv{source_path("scripts/test-sshd.sh").string(), "start",
                                      dir.path().string()};
        if (!fixed_port.empty()) argv.push_back(fixed_port);
        auto r = run_command(argv);
        if (r.exit_code == 77) {
            WARN("SKIPPED: sshd is not installed (scripts/install-deps.sh installs openssh-server)");
            return false;
        }
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        port = std::stoi(r.out);
        return true;
    }
    /// Kills the listener and every connection (as if the server crashed).
    void stop() { run_command({source_path("scripts/test-sshd.sh").string(), "stop", dir.path().string()}); }
    /// Kills only the per-connection sshd processes; the listener stays and accepts new ones.
    void drop_connections() {
        // Each connection is a monitor sshd (child of the listener) and its session sshd below it.
        run_command({"/bin/sh", "-c",
                     "m=$(cat \"$1\"/sshd.pid) || exit 1; kids=$(pgrep -P \"$m\") || exit 0; "
                     "for k in $kids; do pkill -KILL -P \"$k\"; done; kill -KILL $kids",
                     "sh", dir.path().string()});
    }
    /// The pid of a process whose working directory is `cwd` (a remote experiment's directory
    /// on this machine), or 0 when none runs there (yet).
    [[nodiscard]] static pid_t process_in(const std::filesystem::path& cwd) {
        std::error_code ec;
        const auto wanted = std::filesystem::weakly_canonical(cwd, ec);
        for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
            const std::string name = entry.path().filename().string();
            if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
            std::error_code link_error;
            const auto where = std::filesystem::read_symlink(entry.path() / "cwd", link_error);
            if (!link_error && where == wanted) return static_cast<pid_t>(std::stol(name));
        }
        return 0;
    }
    /// Waits up to `limit` for a process to run in `cwd` (see process_in); 0 when none came.
    [[nodiscard]] static pid_t wait_for_process_in(const std::filesystem::path& cwd,
                                                   std::chrono::seconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (;;) {
            if (const pid_t pid = process_in(cwd); pid != 0) return pid;
            if (std::chrono::steady_clock::now() >= deadline) return 0;
            ::usleep(20 * 1000);
        }
    }
    /// The parent of `pid` (from /proc/PID/stat), or 0.
    [[nodiscard]] static pid_t parent_of(pid_t pid) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        const auto close = text.rfind(')');
        if (close == std::string::npos) return 0;
        char state = 0;
        long parent = 0;
        if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &parent) != 2) return 0;
        return static_cast<pid_t>(parent);
    }
    /// ssh://USER@127.0.0.1:PORT for the current user.
    [[nodiscard]] std::string url() const {
        return "ssh://" + std::string(::getpwuid(::getuid())->pw_name) + "@127.0.0.1:" + std::to_string(port);
    }
    /// --known-hosts, --identity and --engine flags for `ncclsweep run`.
    [[nodiscard]] std::vector<std::string> flags() const {
        return {"--known-hosts", (dir.path() / "known_hosts").string(),
                "--identity",    (dir.path() / "user_key").string(),
                "--engine",      binary_path("engine/tpverify").string()};
    }
};

/// `spec_text` with its `target: local` line replaced by the sshd's URL and a work directory.
inline std::string over_ssh(std::string spec_text, const TestSshd& sshd,
                            const std::filesystem::path& workdir) {
    const auto at = spec_text.find("target: local");
    if (at != std::string::npos)
        spec_text.replace(at, 13, "target:\n  url: " + sshd.url() + "\n  workdir: " + workdir.string());
    return spec_text;
}

}  // namespace ncclsweep::test
