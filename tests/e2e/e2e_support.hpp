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

#include "results/store/store.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_sshd.hpp"

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

/// Timeouts for specs run over ssh: starting a command over ssh alone took 3.7-4.0 s on the
/// 2-core development machine at load average 10 (a parallel build running), so the local
/// specs' 3 s stall timeout would time a healthy experiment out before its first line.
inline const std::string k_ssh_timeouts = "  stall: 30\n  total: 120\n";

/// A spec running the simulated tpverify with the given axes block (YAML, indented 2). Its stall
/// timeout (30 s) leaves a loaded machine room: a test that wants a hang ended sooner says so.
inline std::string sim_spec(const std::string& name, const std::string& axes, int repeats = 1,
                            const std::string& timeouts = "  stall: 30\n  total: 60\n",
                            bool nccl_defaults = false) {
    // Without NCCL's defaults point unless asked: most callers test the sweep's machinery
    // (counts, resume, transport), not the recommendation it feeds.
    return "sweep: " + name +
           "\n"
           "target: local\n" +
           (nccl_defaults ? "" : "baseline: none\n") +
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

/// A spec running `sh SERVER` on the local target, with a `ready:` line it never prints (so
/// every experiment ends by the watcher's verdict) and one NCCL_ALGO axis.
inline std::string server_spec(const std::string& name, const std::filesystem::path& server,
                               const std::string& algos = "[Tree]") {
    return "sweep: " + name +
           "\n"
           "target: local\n"
           "baseline: none\n"  // one experiment per algorithm: these tests are about the watcher
           "workload:\n"
           "  command: [sh, " +
           server.string() +
           "]\n"
           "  ready: 'fired up'\n"
           "  stop_after: exit\n"
           "axes:\n"
           "  NCCL_ALGO: " +
           algos + "\n";
}

/// The work directory of sweep `id` under the work directory root `root`: "sweep-ID-UUID" (the
/// uuid is drawn per sweep). Waits up to `limit` for it to appear (a sweep being started);
/// root/"sweep-ID-(none)" when none did.
inline std::filesystem::path sweep_dir(const std::filesystem::path& root, int id = 1,
                                       std::chrono::seconds limit = std::chrono::seconds(0)) {
    const std::string prefix = "sweep-" + std::to_string(id) + "-";
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(root, ec))
            if (entry.path().filename().string().rfind(prefix, 0) == 0) return entry.path();
        if (std::chrono::steady_clock::now() >= deadline) return root / (prefix + "(none)");
        ::usleep(20 * 1000);
    }
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

/// A task for `env_delivery: sitecustomize` checks on any target: `sh TASK py` runs a Python
/// program that appends the NCCL_PROTO it sees to `seen` (what the workload really got) and
/// prints tok_s=1; `sh TASK sh` prints tok_s=1 from the shell alone (not a Python program, so
/// sitecustomize.py never reaches it). Written into `dir`; returns the task's path.
inline std::filesystem::path write_delivery_task(const TempDir& dir, const std::filesystem::path& seen) {
    auto program = dir.write("saw.py",
                             "import os, sys\n"
                             "with open(sys.argv[1], 'a') as f:\n"
                             "    f.write('NCCL_PROTO=%s\\n' % os.environ.get('NCCL_PROTO', '(unset)'))\n"
                             "print('tok_s=1')\n");
    return dir.write("delivery-task.sh",
                     "case \"$1\" in\n"
                     "  py) exec python3 " +
                         program.string() + " " + seen.string() +
                         " ;;\n"
                         "  sh) echo tok_s=1 ;;\n"
                         "esac\n");
}

/// Checks a sweep of write_delivery_task's `mode: [py, sh]` under `env_delivery: sitecustomize`:
/// the Python run saw the swept NCCL_PROTO=LL and is ok, the shell run is a `delivery` failure.
inline void check_delivery_sweep(const std::string& db, const std::filesystem::path& seen) {
    CHECK(read_file(seen) == "NCCL_PROTO=LL\n");
    auto rows = sqlite_rows(db,
                            "SELECT params, status, coalesce(failure_class, ''), coalesce(diagnosis, '') "
                            "FROM experiments ORDER BY exp_id");
    REQUIRE(rows.size() == 2);
    CHECK(rows[0][0].find("\"mode\":\"py\"") != std::string::npos);
    CHECK(rows[0][1] == "ok");
    CHECK(rows[1][0].find("\"mode\":\"sh\"") != std::string::npos);
    CHECK(rows[1][1] == "failed");
    CHECK(rows[1][2] == "delivery");
    CHECK(rows[1][3].find("set target.env_delivery: env or both") != std::string::npos);
}

/// `PRAGMA integrity_check` of `db`: "ok" for a sound file.
inline std::string integrity_check(const std::string& db) {
    auto rows = sqlite_rows(db, "PRAGMA integrity_check");
    return rows.empty() || rows[0].empty() ? "" : rows[0][0];
}

/// `spec_text` with its `target: local` line replaced by the sshd's URL and a work directory.
inline std::string over_ssh(std::string spec_text, const TestSshd& sshd,
                            const std::filesystem::path& workdir) {
    const auto at = spec_text.find("target: local");
    if (at != std::string::npos)
        spec_text.replace(at, 13, "target:\n  url: " + sshd.url() + "\n  workdir: " + workdir.string());
    return spec_text;
}

}  // namespace ncclsweep::test
