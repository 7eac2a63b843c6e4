// End-to-end: what the remote user's login shell does to a sweep over ssh, against the real
// sshd on 127.0.0.1 and real users (tests/support/test_user.hpp: created as root; elsewhere
// these tests are reported skipped). ncclsweep gives the login shell one fixed line and runs
// everything else through its agent (docs/targets.md "The agent"), so a slow login is paid once
// per sweep, a fish or tcsh login shell never reads a value, and one that cannot run the line
// is refused before anything runs.
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/test_user.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// `spec_text` with its `target: local` line replaced by `url` and a work directory.
std::string over_ssh_as(std::string spec_text, const std::string& url, const std::filesystem::path& workdir) {
    const auto at = spec_text.find("target: local");
    REQUIRE(at != std::string::npos);
    spec_text.replace(at, 13, "target:\n  url: " + url + "\n  workdir: " + workdir.string());
    return spec_text;
}

std::vector<std::string> login_run_args(const std::filesystem::path& spec, const std::string& db,
                                        const TestSshd& sshd) {
    std::vector<std::string> args{"run", spec.string(), "--db", db};
    const auto flags = sshd.flags();
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
}

/// Values that mean something to fish, csh/tcsh or nushell (fish reads \' inside '...' as an
/// escape, so `\'$(touch F)\'` would run touch; csh expands `!!`; both substitute (...) or
/// `...`); each would create `pwned` if a login shell ever read it as code.
std::vector<std::string> login_shell_hostile_values(const std::filesystem::path& pwned) {
    const std::string p = pwned.string();
    return {
        "\\'$(touch " + p + ")\\'",
        "(touch " + p + "); echo $HOME {a,b} * ~ %s $status",
        "`touch " + p + "` !! !$ !-1 ^x^y \\ end\\",
        "it's \"double\" 'single'\nsecond line\ttab",
        "h\xc3\xa9llo \xe2\x9c\x93 $(touch " + p + ")",
    };
}

/// A YAML double-quoted scalar holding exactly `value`.
std::string yaml_string(const std::string& value) {
    std::string out = "\"";
    for (char c : value) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else {
            out += c;
        }
    }
    return out + "\"";
}

/// Writes what the workload got (its HOSTILE_* variables and its arguments) as JSON.
constexpr const char* k_login_probe =
    "import json, os, sys\n"
    "env = {k: v for k, v in os.environ.items() if k.startswith('HOSTILE_')}\n"
    "with open(os.path.join(sys.argv[1], 'seen.json'), 'w', encoding='utf-8') as f:\n"
    "    json.dump({'env': env, 'argv': sys.argv[2:]}, f)\n";

}  // namespace

TEST_CASE("run over ssh: a login that takes 1 s is paid once for a 10-experiment sweep") {
    // A real bash login whose ~/.bashrc takes 1 s (as pyenv or conda make one) and appends
    // the line sshd gave the shell to ~/logins. A 1 s login may add at most 4 s to the sweep,
    // i.e. 4 logins; counted, not timed (the time is in docs/benchmarks.md).
    TestUser user("ncclsweep-slow", "/bin/bash",
                  {{".bashrc", "printf '%s\\n' \"$BASH_EXECUTION_STRING\" >> \"$HOME/logins\"\nsleep 1\n"}});
    if (!user.available) return;
    std::filesystem::remove(user.home / "logins");
    TestSshd sshd;
    if (!sshd.available) return;
    user.allow_on(sshd);
    TempDir dir;
    const auto remote = user.own(dir.path() / "remote");
    auto spec = dir.write(
        "s.yaml",
        over_ssh_as(sim_spec("slow-login", "  seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n", 1, k_ssh_timeouts),
                    user.url(sshd), remote));
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep(login_run_args(spec, db, sshd));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 10);
    for (const auto& e : experiments) CHECK(e.outcome.status == results::ExperimentStatus::ok);
    // The preflight, the engine's --describe, 10 experiments and their files: one login, and
    // the only line its shell was given is the fixed one.
    CHECK(user.lines_of("logins") == std::vector<std::string>{"exec /bin/sh -s"});
}

TEST_CASE("run over ssh: fish and tcsh users' sweeps deliver hostile values byte for byte") {
    TestSshd sshd;
    if (!sshd.available) return;
    for (const auto& [name, shell, rc] :
         {std::tuple{"ncclsweep-fish", "/usr/bin/fish", ".config/fish/config.fish"},
          std::tuple{"ncclsweep-tcsh", "/usr/bin/tcsh", ".tcshrc"}}) {
        // Both shells read their start-up file for `-c` commands too: it counts the logins.
        TestUser user(name, shell, {{rc, "echo login >> $HOME/logins\n"}});
        if (!user.available) return;
        std::filesystem::remove(user.home / "logins");
        user.allow_on(sshd);
        TempDir dir;
        const auto out = user.own(dir.path() / "out");
        const auto pwned = out / "pwned";
        const auto values = login_shell_hostile_values(pwned);
        const auto probe = dir.write("probe.py", k_login_probe);
        std::string command = "[/usr/bin/python3, " + probe.string() + ", " + out.string();
        std::string axes;
        for (std::size_t i = 0; i < values.size(); ++i) {
            command += ", \"{p" + std::to_string(i) + "}\"";
            axes += "  HOSTILE_" + std::to_string(i) + ": [" + yaml_string(values[i]) + "]\n";
            axes += "  p" + std::to_string(i) + ": [" + yaml_string(values[i]) + "]\n";
        }
        auto spec = dir.write("s.yaml", over_ssh_as("sweep: login-" + std::string(name) +
                                                        "\ntarget: local\nworkload:\n  command: " + command +
                                                        "]\naxes:\n" + axes + "timeouts:\n" + k_ssh_timeouts,
                                                    user.url(sshd), user.own(dir.path() / "remote")));
        const std::string db = (dir.path() / "r.db").string();
        auto r = run_ncclsweep(login_run_args(spec, db, sshd));
        INFO(shell << ": " << r.err);
        REQUIRE(r.exit_code == 0);
        const std::string text = read_file(out / "seen.json");
        REQUIRE_FALSE(text.empty());
        const auto seen = nlohmann::json::parse(text);
        REQUIRE(seen["argv"].size() == values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
            INFO("value " << i);
            CHECK(seen["argv"][i].get<std::string>() == values[i]);
            CHECK(seen["env"]["HOSTILE_" + std::to_string(i)].get<std::string>() == values[i]);
        }
        CHECK_FALSE(std::filesystem::exists(pwned));
        CHECK(user.lines_of("logins") == std::vector<std::string>{"login"});
    }
}

TEST_CASE("run over ssh: a login shell that cannot start the agent is refused before anything runs") {
    // nologin prints its notice and exits 1 whatever it is asked to run.
    TestUser user("ncclsweep-nologin", "/usr/sbin/nologin");
    if (!user.available) return;
    TestSshd sshd;
    if (!sshd.available) return;
    user.allow_on(sshd);
    TempDir dir;
    const auto remote = dir.path() / "remote";
    auto spec = dir.write(
        "s.yaml",
        over_ssh_as(sim_spec("nologin", "  NCCL_PROTO: [LL]\n", 1, k_ssh_timeouts), user.url(sshd), remote));
    const std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep(login_run_args(spec, db, sshd));
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find(
              "the login shell of ncclsweep-nologin (/usr/sbin/nologin) did not start ncclsweep's agent") !=
          std::string::npos);
    CHECK(r.err.find("exited with status 1") != std::string::npos);
    CHECK(r.err.find("This account is currently not available") != std::string::npos);  // what it said
    CHECK(r.err.find("chsh -s /bin/bash ncclsweep-nologin") != std::string::npos);      // what to do
    CHECK(r.err.find("Nothing was run") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));
    CHECK_FALSE(std::filesystem::exists(remote));
}
