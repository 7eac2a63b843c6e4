// Env rendering, proven by executing it: sitecustomize.py under python3, env files under dash
// and bash, argv through a real exec. Hostile values must arrive byte-exact and never run.
#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/plan/render.hpp"
#include "core/text.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::render;
using ncclsweep::test::run_command;
using ncclsweep::test::TempDir;

namespace {

std::string hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

/// Python that prints {name: hex of os.environb[name] or null} for the names in argv.
const std::string k_dump_env =
    "import os, sys, json\n"
    "print(json.dumps({n: (os.environb[n.encode()].hex() if n.encode() in os.environb else None)"
    " for n in sys.argv[1:]}))\n";

/// Python that prints the hex of each of its arguments (as the bytes exec gave it).
const std::string k_dump_argv =
    "import os, sys, json\n"
    "print(json.dumps([os.fsencode(a).hex() for a in sys.argv[1:]]))\n";

/// Values that would do damage if they were ever treated as code. `dir` is where payloads write.
std::vector<Assignment> hostile_env(const std::filesystem::path& dir) {
    std::string big(10 * 1024, 'x');
    for (std::size_t i = 0; i < big.size(); i += 97) big[i] = "'\"\\\n$`;"[i % 7];
    const std::string d = dir.string();
    return {
        {"NCCL_ALGO", "allreduce:tree"},
        {"NS_QUOTE", "it's \"quoted\""},
        {"NS_BACKSLASH", "back\\slash\\"},
        {"NS_NEWLINE", "line1\nline2\r\nline3\n"},
        {"NS_SUBST", "$(touch " + d + "/pwned_subst)"},
        {"NS_BACKTICK", "`touch " + d + "/pwned_backtick`"},
        {"NS_SEMICOLON", "; touch " + d + "/pwned_semicolon ; '"},
        {"NS_PYTHON", "'); import os; os.system('touch " + d + "/pwned_python'); ('"},
        {"NS_TRIPLE", "'''\"\"\"\\"},
        {"NS_UNICODE", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89 \xc2\xa0"},
        {"NS_CONTROL", "\t\x01\x1b[31m\x7f"},
        {"NS_NOT_UTF8", "\xff\xfe\xc3("},
        {"NS_BRACES", "${HOME} {name} %s"},
        {"NS_EMPTY", ""},
        {"NS_BIG", big},
    };
}

std::vector<std::string> names_of(const std::vector<Assignment>& env) {
    std::vector<std::string> names;
    for (const auto& [name, value] : env) names.push_back(name);
    return names;
}

void check_env_dump(const std::string& json_text, const std::vector<Assignment>& expected) {
    INFO(json_text.substr(0, 2000));
    auto dumped = nlohmann::json::parse(json_text);
    for (const auto& [name, value] : expected) {
        INFO(name);
        REQUIRE(dumped.contains(name));
        REQUIRE_FALSE(dumped[name].is_null());
        CHECK(dumped[name].get<std::string>() == hex(value));
    }
}

void check_no_payload_ran(const std::filesystem::path& dir) {
    for (const char* file : {"pwned_subst", "pwned_backtick", "pwned_semicolon", "pwned_python"}) {
        INFO(file);
        CHECK_FALSE(std::filesystem::exists(dir / file));
    }
}

Provenance hostile_provenance() {
    return {"evil\nimport os; os.system('touch /tmp/ncclsweep-never')\r# \xff", 7, "abc\ndef"};
}

}  // namespace

TEST_CASE("python_quote produces ASCII literals Python reads back exactly") {
    CHECK(python_quote("") == "''");
    CHECK(python_quote("abc") == "'abc'");
    CHECK(python_quote("it's") == "'it\\'s'");
    CHECK(python_quote("a\\b") == "'a\\\\b'");
    CHECK(python_quote("a\nb") == "'a\\nb'");
    CHECK(python_quote(std::string("a\0b", 3)) == "'a\\x00b'");
    CHECK(python_quote("\xc3\xa9") == "'\\xe9'");
    CHECK(python_quote("\xe6\x97\xa5") == "'\\u65e5'");
    CHECK(python_quote("\xf0\x9f\x8e\x89") == "'\\U0001f389'");
    CHECK(python_quote("\xff") == "'\\udcff'");
    for (const auto& [name, value] : hostile_env("/nonexistent")) {
        auto quoted = python_quote(value);
        CHECK(std::all_of(quoted.begin(), quoted.end(), [](char c) {
            return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
        }));
    }
    // Round trip through a real interpreter, NUL included.
    std::string script = "import sys, os\nprint(os.fsencode(" +
                         python_quote(std::string("x\0y'\n\xc3\xa9\xff", 7)) + ").hex())\n";
    auto run = run_command({"python3", "-c", script});
    REQUIRE(run.exit_code == 0);
    CHECK(run.out == hex(std::string("x\0y'\n\xc3\xa9\xff", 7)) + "\n");
}

TEST_CASE("shell_quote makes one word out of anything without NUL") {
    CHECK(shell_quote("") == "''");
    CHECK(shell_quote("abc") == "'abc'");
    CHECK(shell_quote("it's") == "'it'\\''s'");
    CHECK(shell_quote("'") == "''\\'''");
    for (const char* shell : {"sh", "bash"}) {
        INFO(shell);
        std::vector<std::string> args = {shell, "-c", "exec python3 -c \"$0\""};
        std::string script = args[2];
        std::vector<std::string> words = {"", "it's", "$(touch x)", "a b\nc", "\\'\"`", "\xc3\xa9\xff"};
        for (const auto& w : words) script += " " + shell_quote(w);
        auto run = run_command({shell, "-c", script, k_dump_argv});
        REQUIRE(run.exit_code == 0);
        auto dumped = nlohmann::json::parse(run.out);
        REQUIRE(dumped.size() == words.size());
        for (std::size_t i = 0; i < words.size(); ++i) CHECK(dumped[i].get<std::string>() == hex(words[i]));
    }
    // NUL cannot live in a shell word; the renderers that build shell text refuse it (see below),
    // shell_quote itself keeps the byte so nothing is silently changed.
    CHECK(shell_quote(std::string("a\0b", 3)) == std::string("'a\0b'", 5));
}

TEST_CASE("sitecustomize sets every value exactly, runs no payload, and reaches children") {
    TempDir dir;
    auto env = hostile_env(dir.path());
    dir.write("site/sitecustomize.py", sitecustomize(env, hostile_provenance()));
    std::string site = (dir.path() / "site").string();

    std::vector<std::string> argv = {"python3", "-W", "error", "-c", k_dump_env};
    for (const auto& n : names_of(env)) argv.push_back(n);
    auto run = run_command(argv, {}, {"PYTHONPATH=" + site});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.err.empty());
    check_env_dump(run.out, env);

    // A Python child started by Python sees them, even without PYTHONPATH (inherited environment).
    std::string parent =
        "import os, sys, subprocess\n"
        "child_env = dict(os.environ); child_env.pop('PYTHONPATH', None)\n"
        "sys.exit(subprocess.run([sys.executable, '-c', sys.argv[1]] + sys.argv[2:], "
        "env=child_env).returncode)\n";
    std::vector<std::string> child_argv = {"python3", "-c", parent, k_dump_env};
    for (const auto& n : names_of(env)) child_argv.push_back(n);
    auto child = run_command(child_argv, {}, {"PYTHONPATH=" + site});
    INFO(child.err);
    REQUIRE(child.exit_code == 0);
    check_env_dump(child.out, env);
    check_no_payload_ran(dir.path());
    CHECK_FALSE(std::filesystem::exists("/tmp/ncclsweep-never"));
}

TEST_CASE("sitecustomize sets its values over inherited ones: the setting recorded is the setting that ran") {
    TempDir dir;
    dir.write("site/sitecustomize.py",
              sitecustomize({{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "LL"}}, {"s", 1, "k"}));
    // A launch script, a module file or ~/.bashrc exported other values: the sweep's win.
    auto run = run_command({"python3", "-c", k_dump_env, "NCCL_ALGO", "NCCL_PROTO", "NCCL_OTHER"}, {},
                           {"PYTHONPATH=" + (dir.path() / "site").string(), "NCCL_ALGO=ring",
                            "NCCL_PROTO=Simple", "NCCL_OTHER=kept"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto dumped = nlohmann::json::parse(run.out);
    CHECK(dumped["NCCL_ALGO"] == hex("allreduce:tree"));
    CHECK(dumped["NCCL_PROTO"] == hex("LL"));
    CHECK(dumped["NCCL_OTHER"] == hex("kept"));  // what the sweep does not set is left alone
}

TEST_CASE("sitecustomize with a marker file records each interpreter that imported it") {
    TempDir dir;
    dir.write("site/sitecustomize.py",
              sitecustomize({{"NCCL_PROTO", "LL"}, {"NS_BAD", std::string("a\0b", 3)}}, {"s", 1, "k"},
                            Evidence::marker_file));
    const std::string site = (dir.path() / "site").string();
    // A parent and the Python child it spawns: two interpreters, two lines, one process group.
    const std::string parent =
        "import subprocess, sys\n"
        "sys.exit(subprocess.run([sys.executable, '-c', 'pass']).returncode)\n";
    auto run = run_command(
        {"python3", "-c", parent}, {},
        {"PYTHONPATH=" + site, "NCCLSWEEP_REPEAT=3", "SLURM_ARRAY_JOB_ID=42", "SLURM_ARRAY_TASK_ID=7"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.err.empty());
    const std::string marker = test::read_file(dir.path() / "site" / delivery_marker_file(3));
    INFO(marker);
    std::vector<std::string> lines;
    for (std::size_t at = 0, end; (end = marker.find('\n', at)) != std::string::npos; at = end + 1)
        lines.push_back(marker.substr(at, end - at));
    REQUIRE(lines.size() == 2);
    for (const auto& line : lines) {
        CHECK(line.rfind("ncclsweep-delivered pgid=", 0) == 0);
        CHECK(line.find(" task=42_7 repeat=3 ") != std::string::npos);
        // A value no environment can hold (NUL) is named as not set, never silently dropped.
        CHECK(line.find(" missing=NS_BAD ") != std::string::npos);
        CHECK(line.find(" python=") != std::string::npos);
    }
    // Without the marker option (an exported file) nothing is written.
    TempDir other;
    other.write("site/sitecustomize.py", sitecustomize({{"NCCL_PROTO", "LL"}}, {"s", 1, "k"}));
    auto quiet =
        run_command({"python3", "-c", "pass"}, {}, {"PYTHONPATH=" + (other.path() / "site").string()});
    REQUIRE(quiet.exit_code == 0);
    for (const auto& entry : std::filesystem::directory_iterator(other.path() / "site"))
        CHECK(entry.path().filename().string().rfind("delivered", 0) != 0);
}

TEST_CASE("sitecustomize runs the one it shadows, after setting its values, and reports its error") {
    TempDir dir;
    dir.write("site/sitecustomize.py",
              sitecustomize({{"NCCL_PROTO", "LL"}}, {"s", 1, "k"}, Evidence::marker_file));
    // The next sitecustomize on sys.path (a user's, or the distribution's): it must still run,
    // and it sees the sweep's values.
    dir.write("user/sitecustomize.py",
              "import os\n"
              "os.environ['USER_SITE_SAW'] = os.environ.get('NCCL_PROTO', 'unset')\n"
              "if os.environ.get('BREAK_USER_SITE'):\n"
              "    raise RuntimeError('user site is broken')\n");
    const std::string path =
        "PYTHONPATH=" + (dir.path() / "site").string() + ":" + (dir.path() / "user").string();
    auto run = run_command({"python3", "-c", k_dump_env, "NCCL_PROTO", "USER_SITE_SAW"}, {}, {path});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.err.empty());
    auto dumped = nlohmann::json::parse(run.out);
    CHECK(dumped["NCCL_PROTO"] == hex("LL"));
    CHECK(dumped["USER_SITE_SAW"] == hex("LL"));
    // The same folder twice on the path: the file does not run itself again.
    auto twice =
        run_command({"python3", "-c", "print('once')"}, {},
                    {"PYTHONPATH=" + (dir.path() / "site").string() + ":" + (dir.path() / "site").string()});
    CHECK(twice.exit_code == 0);
    CHECK(twice.out == "once\n");

    // Its error is not swallowed: the traceback on stderr, named, and a line in the marker file;
    // the program itself still runs, as Python runs it after a failing sitecustomize.
    auto broken = run_command({"python3", "-c", "print('program ran')"}, {}, {path, "BREAK_USER_SITE=1"});
    INFO(broken.err);
    CHECK(broken.exit_code == 0);
    CHECK(broken.out == "program ran\n");
    CHECK(broken.err.find("ncclsweep: the sitecustomize.py this one shadows, " +
                          (dir.path() / "user/sitecustomize.py").string() +
                          ", raised RuntimeError: user site is broken") != std::string::npos);
    CHECK(broken.err.find("Traceback (most recent call last):") != std::string::npos);
    CHECK(broken.err.find("RuntimeError: user site is broken") != std::string::npos);
    const std::string marker = test::read_file(dir.path() / "site" / "delivered--");
    CHECK(marker.find("ncclsweep-chained ") != std::string::npos);
    CHECK(marker.find("raised RuntimeError: user site is broken") != std::string::npos);
}

TEST_CASE("sitecustomize never raises, even for values the OS environment cannot hold") {
    TempDir dir;
    std::vector<Assignment> env = {{"NS_BEFORE", "1"},
                                   {"NS_NUL", std::string("a\0b", 3)},
                                   {"NS=EQUALS", "x"},
                                   {"", "empty name"},
                                   {"NS_AFTER", "2"}};
    auto text = sitecustomize(env, hostile_provenance());
    dir.write("site/sitecustomize.py", text);
    auto run = run_command({"python3", "-c", k_dump_env, "NS_BEFORE", "NS_AFTER"}, {},
                           {"PYTHONPATH=" + (dir.path() / "site").string()});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.err.find("Error in sitecustomize") == std::string::npos);
    CHECK(run.err.empty());
    check_env_dump(run.out, {{"NS_BEFORE", "1"}, {"NS_AFTER", "2"}});
    // Even with os.environ replaced by something that cannot be written to.
    auto broken = run_command(
        {"python3", "-c", "import os, sys; os.environ = None; exec(open(sys.argv[1]).read()); print('ok')",
         (dir.path() / "site/sitecustomize.py").string()});
    INFO(broken.err);
    CHECK(broken.exit_code == 0);
    CHECK(broken.out == "ok\n");
}

TEST_CASE("sitecustomize comment carries the experiment and cannot be broken out of") {
    auto text = sitecustomize({{"A", "1"}}, hostile_provenance());
    CHECK(text.find("# experiment: 7  key: abc\\x0adef") != std::string::npos);
    CHECK(text.find("evil\\x0aimport os") != std::string::npos);
    CHECK(std::all_of(text.begin(), text.end(), [](char c) {
        auto b = static_cast<unsigned char>(c);
        return c == '\n' || (b >= 0x20 && b < 0x7f);
    }));
    for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
        end = text.find('\n', start);
        std::string line = text.substr(start, end - start);
        if (line.find("import os;") != std::string::npos) CHECK(line.rfind("# ", 0) == 0);
    }
}

TEST_CASE("env file loads exactly under dash and bash with set -a") {
    TempDir dir;
    auto env = hostile_env(dir.path());
    auto text = env_file(env, hostile_provenance());
    REQUIRE(text.ok());
    auto file = dir.write("experiment.env", *text);
    for (const char* shell : {"sh", "dash", "bash"}) {
        INFO(shell);
        if (run_command({"sh", "-c", std::string("command -v ") + shell}).exit_code != 0) continue;
        std::vector<std::string> argv = {
            shell, "-c", "set -a; . \"$1\"; shift; exec python3 -c \"$@\"", shell, file.string(), k_dump_env};
        for (const auto& n : names_of(env)) argv.push_back(n);
        auto run = run_command(argv);
        INFO(run.err);
        REQUIRE(run.exit_code == 0);
        check_env_dump(run.out, env);
    }
    check_no_payload_ran(dir.path());
}

TEST_CASE("env file refuses bad names and NUL values") {
    auto bad_name = env_file({{"GOOD", "1"}, {"BAD NAME", "x"}}, {"s", 3, "k"});
    REQUIRE_FALSE(bad_name.ok());
    CHECK(bad_name.error().kind == ErrorKind::bad_input);
    CHECK(bad_name.error().message.find("BAD NAME") != std::string::npos);
    CHECK(bad_name.error().message.find("experiment 3") != std::string::npos);
    for (const char* name : {"1ABC", "A-B", "", "A=B", "$(x)"}) CHECK_FALSE(env_file({{name, "1"}}, {}).ok());
    auto nul = env_file({{"NS", std::string("a\0b", 3)}}, {});
    REQUIRE_FALSE(nul.ok());
    CHECK(nul.error().message.find("NUL") != std::string::npos);
    CHECK(env_file({{"_ok9", ""}}, {}).ok());
}

namespace {

WorkloadSpec engine_workload() {
    WorkloadSpec w;
    w.engine = "tpverify";
    w.args = {{"preset", {"kimi-k2.5", {}}},
              {"tokens", {"4", {}}},
              {"graph", {"true", {}}},
              {"check", {"false", {}}},
              {"warmup_iters", {"10", {}}}};
    return w;
}

WorkloadSpec list_command(std::vector<std::string> elements) {
    WorkloadSpec w;
    for (auto& e : elements) w.command.push_back({std::move(e), {"spec.yaml", 12, 3}});
    return w;
}

}  // namespace

TEST_CASE("tpverify argv: --json, args then params, params win, booleans as bare flags") {
    auto argv = command_argv(engine_workload(),
                             {{"tokens", "8"}, {"fusion", "true"}, {"tp", "8"}, {"graph", "false"}},
                             "/opt/bin/tpverify");
    REQUIRE(argv.ok());
    std::vector<std::string> expected = {
        "/opt/bin/tpverify", "--json", "--preset", "kimi-k2.5", "--tokens", "8",
        "--warmup-iters",    "10",     "--fusion", "--tp",      "8"};
    CHECK(*argv == expected);
    auto bad = command_argv(engine_workload(), {{"--evil", "1"}}, "tpverify");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().kind == ErrorKind::bad_input);
    WorkloadSpec other;
    other.engine = "nccl-tests";
    CHECK_FALSE(command_argv(other, {}, "x").ok());
}

TEST_CASE("tpverify argv carries hostile values as single elements through a real exec") {
    TempDir dir;
    const std::string payload =
        "$(touch " + dir.path().string() + "/pwned_subst); `touch x` 'q' \"\n\xc3\xa9";
    auto argv = command_argv(engine_workload(), {{"label", payload}}, "python3");
    REQUIRE(argv.ok());
    // Run the argv with python3 as the "engine": replace --json by a script that dumps its args.
    std::vector<std::string> run_argv = *argv;
    run_argv.insert(run_argv.begin() + 1, {"-c", k_dump_argv});
    auto run = run_command(run_argv);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto dumped = nlohmann::json::parse(run.out);
    REQUIRE(dumped.size() + 1 == argv->size());
    for (std::size_t i = 1; i < argv->size(); ++i) CHECK(dumped[i - 1].get<std::string>() == hex((*argv)[i]));
    CHECK(argv->back() == payload);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "pwned_subst"));
}

TEST_CASE("list command: placeholders replaced inside elements, lone empty placeholder dropped") {
    auto w = list_command({"python3", "-c", "{script}", "--tp={tp}", "{extra}", "{{literal}}", "{tokens}"});
    std::string script = k_dump_argv;
    auto argv = command_argv(w, {{"script", script}, {"tp", "8"}, {"extra", ""}, {"tokens", "a b;$(c)"}}, "");
    REQUIRE(argv.ok());
    std::vector<std::string> expected = {"python3", "-c", script, "--tp=8", "{literal}", "a b;$(c)"};
    CHECK(*argv == expected);
    auto run = run_command(*argv);
    REQUIRE(run.exit_code == 0);
    auto dumped = nlohmann::json::parse(run.out);
    REQUIRE(dumped.size() == 3);
    CHECK(dumped[2].get<std::string>() == hex("a b;$(c)"));
}

TEST_CASE("placeholder errors name the placeholder and the spec location") {
    auto unknown = command_argv(list_command({"server", "--x={nope}"}), {{"tp", "8"}}, "");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().kind == ErrorKind::bad_input);
    CHECK(unknown.error().message.find("{nope}") != std::string::npos);
    CHECK(unknown.error().message.find("spec.yaml:12:3") != std::string::npos);
    CHECK(unknown.error().message.find("tp") != std::string::npos);
    auto env_name = command_argv(list_command({"server", "{NCCL_ALGO}"}), {}, "");
    REQUIRE_FALSE(env_name.ok());
    CHECK(env_name.error().message.find("$NCCL_ALGO") != std::string::npos);
    CHECK_FALSE(command_argv(list_command({"a{b"}), {}, "").ok());
    CHECK_FALSE(command_argv(list_command({"a}b"}), {}, "").ok());
    CHECK_FALSE(command_argv(list_command({"{a b}"}), {{"a b", "1"}}, "").ok());
    CHECK_FALSE(command_argv(WorkloadSpec{}, {}, "").ok());
    CHECK_FALSE(command_argv(list_command({"{x}"}), {{"x", ""}}, "").ok());  // nothing left to run
}

TEST_CASE("string command runs under /bin/sh with every value shell-quoted") {
    TempDir dir;
    auto w =
        list_command({"exec python3 -c \"$0\" {a} {b} {c} ${{NS_ENV}} > " + dir.path().string() + "/out"});
    w.command_is_shell = true;
    const std::string a = "$(touch " + dir.path().string() + "/pwned_subst)";
    const std::string b = "it's `touch " + dir.path().string() + "/pwned_backtick`; exit 3";
    const std::string c = "line\n\xc3\xa9 \\ \"";
    auto argv = command_argv(w, {{"a", a}, {"b", b}, {"c", c}}, "");
    REQUIRE(argv.ok());
    REQUIRE(argv->size() == 3);
    CHECK((*argv)[0] == "/bin/sh");
    CHECK((*argv)[1] == "-c");
    std::vector<std::string> run_argv = *argv;
    run_argv.push_back(k_dump_argv);  // becomes $0
    auto run = run_command(run_argv, {}, {"NS_ENV=from env"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto dumped = nlohmann::json::parse(ncclsweep::test::read_file(dir.path() / "out"));
    std::vector<std::string> expected = {a, b, c, "from", "env"};
    REQUIRE(dumped.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) CHECK(dumped[i].get<std::string>() == hex(expected[i]));
    CHECK_FALSE(std::filesystem::exists(dir.path() / "pwned_subst"));
    CHECK_FALSE(std::filesystem::exists(dir.path() / "pwned_backtick"));
    auto nul = command_argv(w, {{"a", std::string("x\0y", 3)}, {"b", ""}, {"c", ""}}, "");
    CHECK_FALSE(nul.ok());
}
