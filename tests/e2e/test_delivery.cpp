// End-to-end: the setting recorded is the setting that ran (issue 25). Each case is what a new
// user hit with `env_delivery: sitecustomize`: the workload itself reports what it saw (a small
// Python program writes the NCCL_PROTO it reads into a file), never what the runner meant to send.
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;
namespace fs = std::filesystem;

namespace {

/// The workload: writes "NCCL_PROTO=<what it sees>" to argv[1] (appending), and reports tok_s.
/// With argv[2] = "child", the value is read by a Python child started with the environment a
/// server builds for its workers (NCCL_PROTO not passed on, PYTHONPATH kept) after the file
/// argv[3] exists; argv[4], when given, is created first to say it waits.
const std::string k_workload = R"PY(import os, subprocess, sys, time
seen = os.environ.get('NCCL_PROTO', '(unset)')
if len(sys.argv) > 2 and sys.argv[2] == 'child':
    if len(sys.argv) > 4:
        open(sys.argv[4], 'w').close()
    while not os.path.exists(sys.argv[3]):
        time.sleep(0.02)
    env = dict(os.environ)
    env.pop('NCCL_PROTO', None)
    seen = subprocess.run([sys.executable, '-c', "import os; print(os.environ.get('NCCL_PROTO', '(unset)'))"],
                          env=env, capture_output=True, text=True).stdout.strip()
with open(sys.argv[1], 'a') as f:
    f.write('NCCL_PROTO=%s\n' % seen)
print('saw NCCL_PROTO=%s' % seen)
print('tok_s: 1')
)PY";

/// A spec running `command` (a YAML flow list) under `delivery`, with a work directory root;
/// without NCCL's defaults point unless `baseline` (these tests count the swept points' runs).
std::string python_spec(const std::string& name, const std::string& delivery, const std::string& command,
                        const std::string& axes, const std::string& workdir = "", bool baseline = false) {
    return "sweep: " + name + (baseline ? "" : "\nbaseline: none") +
           "\ntarget:\n  url: local\n  env_delivery: " + delivery + "\n" +
           (workdir.empty() ? "" : "  workdir: '" + workdir + "'\n") + "workload:\n  command: " + command +
           "\n  metrics:\n    tok_s: 'tok_s: ([0-9.]+)'\naxes:\n" + axes +
           "timeouts:\n  stall: 300\n  total: 600\n";
}

/// Runs `sql` on the SQLite file `db` (read-write); "" or SQLite's message.
std::string sqlite_exec(const std::string& db, const std::string& sql) {
    sqlite3* handle = nullptr;
    std::string error;
    if (sqlite3_open(db.c_str(), &handle) == SQLITE_OK) {
        sqlite3_busy_timeout(handle, 5000);
        char* message = nullptr;
        if (sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK)
            error = message ? message : "error";
        sqlite3_free(message);
    } else {
        error = sqlite3_errmsg(handle);
    }
    sqlite3_close(handle);
    return error;
}

/// Waits (polling, up to two minutes) until `path` exists.
bool wait_for_file(const fs::path& path) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(path)) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

}  // namespace

TEST_CASE("delivery 1: the swept value wins over the caller's environment in every delivery mode") {
    TempDir dir;
    auto workload = dir.write("w.py", k_workload);
    for (const std::string delivery : {"sitecustomize", "both", "env"}) {
        INFO(delivery);
        const auto seen = dir.path() / ("seen-" + delivery);
        auto spec = dir.write(
            "s-" + delivery + ".yaml",
            python_spec("inherit", delivery, "[python3, " + workload.string() + ", " + seen.string() + "]",
                        "  NCCL_PROTO: [LL]\n"));
        const std::string db = (dir.path() / ("r-" + delivery + ".db")).string();
        // A launch script exported NCCL_PROTO (swept: the sweep's wins) and NCCL_SOCKET_IFNAME
        // (not in the spec: every experiment inherits it, and the sweep says so).
        auto r = run_ncclsweep({"run", spec.string(), "--db", db},
                               {"NCCL_PROTO=Simple", "NCCL_SOCKET_IFNAME=lo-test"});
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        CHECK(read_file(seen) == "NCCL_PROTO=LL\n");
        CHECK(r.err.find("warning: the workload inherits") != std::string::npos);
        CHECK(r.err.find("NCCL_SOCKET_IFNAME=lo-test") != std::string::npos);
        CHECK(r.err.find("NCCL_PROTO=Simple") == std::string::npos);  // swept: not inherited
    }
    // Recorded with the sweep and shown by results show, export's evidence and diff.
    const std::string db = (dir.path() / "r-sitecustomize.db").string();
    auto shown = run_ncclsweep({"results", "show", "latest", "--db", db});
    CHECK(shown.out.find("inherited from the environment the workload started in") != std::string::npos);
    CHECK(shown.out.find("NCCL_SOCKET_IFNAME=lo-test") != std::string::npos);
    auto json = run_ncclsweep({"results", "show", "latest", "--db", db, "--json"});
    CHECK(json.out.find("\"NCCL_SOCKET_IFNAME\": \"lo-test\"") != std::string::npos);
    auto exported = run_ncclsweep({"export", "latest", "--format", "sitecustomize", "--best", "--db", db});
    REQUIRE(exported.exit_code == 0);
    CHECK(exported.out.find("# inherited: the workload also ran with these") != std::string::npos);
    CHECK(exported.out.find("NCCL_SOCKET_IFNAME=lo-test") != std::string::npos);
    // With NCCL's defaults point, the inherited NCCL_PROTO would run as "defaults": refused,
    // before anything is recorded, naming the variable and the two ways out.
    auto with_defaults = dir.write("d.yaml", python_spec("inherit", "sitecustomize",
                                                         "[python3, " + workload.string() + ", " +
                                                             (dir.path() / "seen-d").string() + "]",
                                                         "  NCCL_PROTO: [LL]\n", "", true));
    const std::string db_d = (dir.path() / "r-d.db").string();
    auto refused = run_ncclsweep({"run", with_defaults.string(), "--db", db_d}, {"NCCL_PROTO=Simple"});
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("NCCL_PROTO=Simple is exported") != std::string::npos);
    CHECK(refused.err.find("env -u NCCL_PROTO ncclsweep run") != std::string::npos);
    CHECK(refused.err.find("baseline: none") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path() / "seen-d"));
    // Without the variable in the environment the same spec runs both points.
    auto plain = run_ncclsweep({"run", with_defaults.string(), "--db", db_d});
    CHECK(plain.exit_code == 0);
    CHECK(read_file(dir.path() / "seen-d") == "NCCL_PROTO=LL\nNCCL_PROTO=(unset)\n");
    auto again = run_ncclsweep({"run", (dir.path() / "s-sitecustomize.yaml").string(), "--db", db});
    REQUIRE(again.exit_code == 0);
    auto diff = run_ncclsweep({"diff", "latest~1", "latest", "--db", db});
    CHECK(diff.out.find("inherited NCCL_SOCKET_IFNAME: lo-test -> (not set)") != std::string::npos);
}

TEST_CASE("delivery 2: two sweeps of two databases in one folder never share a work directory") {
    TempDir dir;
    auto workload = dir.write("w.py", k_workload);
    const auto go = dir.path() / "go";
    const auto waiting = dir.path() / "a-waiting";
    // Same folder, same work directory root, different databases: both are sweep 1 of theirs.
    auto spec_a = dir.write(
        "a.yaml", python_spec("a", "sitecustomize",
                              "[python3, " + workload.string() + ", " + (dir.path() / "seen-a").string() +
                                  ", child, " + go.string() + ", " + waiting.string() + "]",
                              "  NCCL_PROTO: [LL]\n", (dir.path() / "work").string()));
    auto spec_b = dir.write(
        "b.yaml",
        python_spec("b", "sitecustomize",
                    "[python3, " + workload.string() + ", " + (dir.path() / "seen-b").string() + "]",
                    "  NCCL_PROTO: [Simple]\n", (dir.path() / "work").string()));
    const std::string db_a = (dir.path() / "a.db").string();
    auto a = spawn_ncclsweep(dir.path(), {"run", spec_a.string(), "--db", db_a}, "a");
    REQUIRE(a.pid > 0);
    // A's workload is running and will start a Python worker later; meanwhile B runs whole.
    REQUIRE(wait_for_file(waiting));
    auto b = run_ncclsweep({"run", spec_b.string(), "--db", (dir.path() / "b.db").string()});
    INFO(b.err);
    CHECK(b.exit_code == 0);
    CHECK(read_file(dir.path() / "seen-b") == "NCCL_PROTO=Simple\n");
    std::ofstream(go.string()).close();
    auto ended = finish(a);
    INFO(ended.err);
    CHECK(ended.exit_code == 0);
    // A's worker, started after B wrote its files, still got A's setting.
    CHECK(read_file(dir.path() / "seen-a") == "NCCL_PROTO=LL\n");
    const std::string uuid_a = sqlite_rows(db_a, "SELECT uuid FROM sweeps")[0][0];
    const std::string uuid_b = sqlite_rows((dir.path() / "b.db").string(), "SELECT uuid FROM sweeps")[0][0];
    CHECK(uuid_a.size() == 32);
    CHECK(uuid_a != uuid_b);
    CHECK(fs::is_directory(dir.path() / "work" / ("sweep-1-" + uuid_a)));
    CHECK(fs::is_directory(dir.path() / "work" / ("sweep-1-" + uuid_b)));
}

TEST_CASE(
    "delivery 2b: a copy of a database resumed while the original runs is refused by the work directory's "
    "lock") {
    TempDir dir;
    auto workload = dir.write("w.py", k_workload);
    const auto go = dir.path() / "go";
    const auto waiting = dir.path() / "waiting";
    auto spec = dir.write(
        "a.yaml", python_spec("a", "sitecustomize",
                              "[python3, " + workload.string() + ", " + (dir.path() / "seen").string() +
                                  ", child, " + go.string() + ", " + waiting.string() + "]",
                              "  NCCL_PROTO: [LL]\n", (dir.path() / "work").string()));
    const std::string db_a = (dir.path() / "a.db").string();
    auto a = spawn_ncclsweep(dir.path(), {"run", spec.string(), "--db", db_a}, "a");
    REQUIRE(a.pid > 0);
    REQUIRE(wait_for_file(waiting));
    // The store cannot see A's runner from the copy (another file, its pid set to a dead one);
    // the work directory's lock can, and names who holds it.
    const std::string db_c = (dir.path() / "c.db").string();
    std::string literal;  // db_c as an SQL string literal: each ' doubled
    for (char ch : db_c) literal += ch == '\'' ? std::string("''") : std::string(1, ch);
    REQUIRE(sqlite_exec(db_a, "VACUUM INTO '" + literal + "'").empty());
    REQUIRE(sqlite_exec(db_c, "UPDATE sweeps SET runner_pid = 999999999").empty());
    auto c = run_ncclsweep({"run", spec.string(), "--db", db_c, "--resume"});
    INFO(c.err);
    CHECK(c.exit_code == 3);
    CHECK(c.err.find("is in use by sweep 1 (") != std::string::npos);
    CHECK(c.err.find("of database " + db_a) != std::string::npos);
    std::ofstream(go.string()).close();
    auto ended = finish(a);
    INFO(ended.err);
    CHECK(ended.exit_code == 0);
    CHECK(read_file(dir.path() / "seen") == "NCCL_PROTO=LL\n");  // A ran alone
}

TEST_CASE(
    "delivery 3: a work directory that cannot go on PYTHONPATH is a located error before anything runs") {
    TempDir dir;
    auto workload = dir.write("w.py", k_workload);
    const auto seen = dir.path() / "seen";
    const std::string command = "[python3, " + workload.string() + ", " + seen.string() + "]";
    // target.workdir with ':' (PYTHONPATH's separator): the spec's line says so.
    auto spec = dir.write("s.yaml", python_spec("colon", "sitecustomize", command, "  NCCL_PROTO: [LL]\n",
                                                (dir.path() / "a:b").string()));
    for (const auto& args :
         {std::vector<std::string>{"plan", spec.string()},
          std::vector<std::string>{"run", spec.string(), "--db", (dir.path() / "r.db").string()}}) {
        auto r = run_ncclsweep(args);
        INFO(r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(spec.string() + ":6:") != std::string::npos);
        CHECK(r.err.find("cannot go on PYTHONPATH") != std::string::npos);
    }
    // env delivery needs no PYTHONPATH: the same directory is fine.
    auto env_spec = dir.write("env.yaml", python_spec("colon", "env", command, "  NCCL_PROTO: [LL]\n",
                                                      (dir.path() / "a:b").string()));
    CHECK(run_ncclsweep({"plan", env_spec.string()}).exit_code == 0);
    // The default root under a current directory with ':' in its path.
    fs::create_directories(dir.path() / "x:y");
    auto plain = dir.write("plain.yaml", python_spec("colon", "both", command, "  NCCL_PROTO: [LL]\n"));
    auto r = run_command(
        {"sh", "-c", "cd \"$1\" && exec \"$2\" run \"$3\" --db \"$4\"", "sh", (dir.path() / "x:y").string(),
         binary_path("cli/ncclsweep").string(), plain.string(), (dir.path() / "d.db").string()},
        {}, {"NO_COLOR=1", "NCCLSWEEP_DB="});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("x:y/.ncclsweep/work/sweep-1-") != std::string::npos);
    CHECK(r.err.find("cannot go on PYTHONPATH") != std::string::npos);
    CHECK_FALSE(fs::exists(seen));  // nothing ran
}

TEST_CASE("delivery 4: settings that never reached the workload are a delivery failure, never ok") {
    TempDir dir;
    auto workload = dir.write("w.py", k_workload);
    const auto seen = dir.path() / "seen";
    const std::string w = workload.string() + " " + seen.string();
    auto launcher = dir.write("launch.sh",
                              "case \"$1\" in\n"
                              "  plain) exec python3 " +
                                  w +
                                  " ;;\n"
                                  "  isolated) exec python3 -I " +
                                  w +
                                  " ;;\n"
                                  "  nosite) exec python3 -S " +
                                  w +
                                  " ;;\n"
                                  "  reset) PYTHONPATH= exec python3 " +
                                  w +
                                  " ;;\n"
                                  "  shell) echo \"NCCL_PROTO=${NCCL_PROTO:-(unset)}\" >> " +
                                  seen.string() +
                                  "; echo 'tok_s: 1' ;;\n"
                                  "esac\n");
    auto spec = dir.write(
        "s.yaml", python_spec("undelivered", "sitecustomize", "[sh, " + launcher.string() + ", '{mode}']",
                              "  NCCL_PROTO: [LL]\n  mode: [plain, isolated, nosite, reset, shell]\n"));
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);  // one experiment is ok
    // What each workload really saw: only the plain Python one got the setting.
    CHECK(read_file(seen) ==
          "NCCL_PROTO=LL\nNCCL_PROTO=(unset)\nNCCL_PROTO=(unset)\nNCCL_PROTO=(unset)\n"
          "NCCL_PROTO=(unset)\n");
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 5);
    CHECK(experiments[0].outcome.status == results::ExperimentStatus::ok);
    for (std::size_t i = 1; i < experiments.size(); ++i) {
        const auto& o = experiments[i].outcome;
        INFO(experiments[i].experiment.canonical << ": " << o.diagnosis);
        CHECK(o.status == results::ExperimentStatus::failed);
        CHECK(o.failure_class == "delivery");
        CHECK(o.samples.empty());
        CHECK(o.diagnosis.rfind("settings not delivered: no Python interpreter imported sitecustomize.py",
                                0) == 0);
        CHECK(o.diagnosis.find("set target.env_delivery: env or both") != std::string::npos);
    }
    auto shown = run_ncclsweep({"results", "show", "latest", "--db", db});
    CHECK(shown.out.find("failed (delivery)") != std::string::npos);
    // The bundled engine is not a Python program: under sitecustomize alone nothing reaches it.
    auto engine =
        dir.write("engine.yaml",
                  "sweep: engine\nbaseline: none\ntarget:\n  url: local\n  env_delivery: sitecustomize\n"
                  "workload:\n  engine: tpverify\n  args: {backend: sim, iters: 5, warmup: 1}\n"
                  "axes:\n  NCCL_PROTO: [LL]\n");
    auto e = run_ncclsweep({"run", engine.string(), "--db", (dir.path() / "e.db").string()});
    INFO(e.err);
    CHECK(e.exit_code == 1);
    auto engine_runs = latest_experiments((dir.path() / "e.db").string());
    REQUIRE(engine_runs.size() == 1);
    CHECK(engine_runs[0].outcome.failure_class == "delivery");
}

TEST_CASE(
    "delivery 5: the sitecustomize a sweep's shadows still runs, and its error is in the experiment's log") {
    TempDir dir;
    auto workload = dir.write("w.py", k_workload);
    // A user's sitecustomize.py on PYTHONPATH (a distribution's lives further down sys.path).
    dir.write("user/sitecustomize.py",
              "import os\n"
              "with open(" +
                  ("'" + (dir.path() / "user-ran").string() + "'") +
                  ", 'a') as f:\n"
                  "    f.write('NCCL_PROTO=%s\\n' % os.environ.get('NCCL_PROTO', '(unset)'))\n"
                  "if os.environ.get('BREAK_USER_SITE'):\n"
                  "    raise RuntimeError('user site is broken')\n");
    const std::string pythonpath = "PYTHONPATH=" + (dir.path() / "user").string();
    auto spec = dir.write(
        "s.yaml", python_spec("chain", "sitecustomize",
                              "[python3, " + workload.string() + ", " + (dir.path() / "seen").string() + "]",
                              "  NCCL_PROTO: [LL]\n"));
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db}, {pythonpath});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    // The user's file ran in the workload, after the sweep's had set the swept value. (The
    // preflight's own Python may have run it too, without the sweep's file: that line reads unset.)
    const std::string ran = read_file(dir.path() / "user-ran");
    INFO(ran);
    CHECK(ran.find("NCCL_PROTO=LL\n") != std::string::npos);
    CHECK(read_file(dir.path() / "seen") == "NCCL_PROTO=LL\n");

    // Its error is not swallowed: the experiment shows it, with the file named.
    auto broken = run_ncclsweep({"run", spec.string(), "--db", db}, {pythonpath, "BREAK_USER_SITE=1"});
    INFO(broken.err);
    auto log = run_ncclsweep({"results", "log", "latest", "1", "--db", db});
    INFO(log.out);
    CHECK(log.out.find("the sitecustomize.py this one shadows, " +
                       (dir.path() / "user/sitecustomize.py").string() +
                       ", raised RuntimeError: user site is broken") != std::string::npos);
    CHECK(log.out.find("sitecustomize_chain: " + (dir.path() / "user/sitecustomize.py").string() +
                       " raised RuntimeError: user site is broken") != std::string::npos);
}

TEST_CASE("delivery 6: a runner that is a zombie after kill -9 does not hold its sweep") {
    TempDir dir;
    const auto release = dir.path() / "release";
    const auto started = dir.path() / "started";
    auto workload = dir.write("hold.py",
                              "import os, sys, time\n"
                              "with open(sys.argv[1] + '.tmp', 'w') as f:\n"
                              "    f.write(str(os.getpid()))\n"
                              "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
                              "while not os.path.exists(sys.argv[2]):\n"
                              "    time.sleep(0.02)\n"
                              "print('tok_s: 1')\n");
    auto spec = dir.write("s.yaml", python_spec("zombie", "sitecustomize",
                                                "[python3, " + workload.string() + ", " + started.string() +
                                                    ", " + release.string() + "]",
                                                "  NCCL_PROTO: [LL]\n"));
    const std::string db = (dir.path() / "r.db").string();
    auto run = spawn_ncclsweep(dir.path(), {"run", spec.string(), "--db", db});
    REQUIRE(run.pid > 0);
    REQUIRE(wait_for_file(started));
    // kill -9, and nobody reaps it (as in a container without an init): it stays a zombie.
    ::kill(run.pid, SIGKILL);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::string state;
    while (std::chrono::steady_clock::now() < deadline) {
        const std::string stat = read_file("/proc/" + std::to_string(run.pid) + "/stat");
        state = stat.substr(stat.rfind(')') + 2, 1);
        if (state == "Z") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(state == "Z");
    // Its workload lives on in its own session: end it as its runner would have.
    const pid_t orphan = std::stoi(read_file(started));
    ::kill(-orphan, SIGKILL);
    std::ofstream(release.string()).close();

    auto resumed = run_ncclsweep({"run", spec.string(), "--db", db, "--resume"});
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
    CHECK(resumed.err.find("still being run by pid") == std::string::npos);
    CHECK(sqlite_rows(db, "SELECT state FROM sweeps")[0][0] == "done");
    REQUIRE(::waitpid(run.pid, nullptr, 0) == run.pid);
}
