// Security, end to end: hostile spec values reach the workload as exact data in every
// rendering (env, sitecustomize.py, argv of a list or a /bin/sh string command, the remote
// command over ssh) and never execute; malformed specs give located errors and run nothing.
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// The hostile values; each one, if it ever reached a shell as code, would create `pwned`.
std::vector<std::string> hostile_values(const std::filesystem::path& pwned) {
    const std::string p = pwned.string();
    return {
        "it's \"quoted\" 'twice'",
        "first line\nsecond line\n",
        "$(touch " + p + ")",
        "`touch " + p + "`",
        "; touch " + p + "; #",
        "&& touch " + p + " || touch " + p + " | touch " + p + " > " + p,
        "h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x9a\x80",  // héllo ✓ 日本語
                                                                                            // 🚀
        "back\\slash\ttab $HOME ${PATH} %s %n {p0} {{x}} \\' \\\" '\"' \"'\"",
        std::string(20000, 'L') + "$(touch " + p + ")",
    };
}

/// A YAML double-quoted scalar holding exactly `value`.
std::string yaml_quoted(const std::string& value) {
    std::string out = "\"";
    for (char c : value) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                out += c;
        }
    }
    return out + "\"";
}

const char* k_probe =
    "import json, os, sys\n"
    "out = os.path.join(sys.argv[1], os.environ['NCCLSWEEP_EXPERIMENT_ID'] + '.json')\n"
    "env = {k: v for k, v in os.environ.items() if k.startswith('HOSTILE_')}\n"
    "with open(out, 'w', encoding='utf-8') as f:\n"
    "    json.dump({'env': env, 'argv': sys.argv[2:]}, f)\n";

enum class Form { list, string };

/// A spec whose one experiment carries every hostile value as env HOSTILE_i and parameter p_i.
std::string hostile_spec(const TempDir& dir, const std::vector<std::string>& values,
                         const std::string& delivery, Form form) {
    const auto probe = dir.write("probe.py", k_probe);
    const auto out = dir.path() / "out";
    std::filesystem::create_directories(out);
    std::string command;
    if (form == Form::list) {
        command = "[/usr/bin/python3, " + probe.string() + ", " + out.string();
        for (std::size_t i = 0; i < values.size(); ++i) command += ", \"{p" + std::to_string(i) + "}\"";
        command += "]";
    } else {
        command = "\"/usr/bin/python3 " + probe.string() + " " + out.string();
        for (std::size_t i = 0; i < values.size(); ++i) command += " {p" + std::to_string(i) + "}";
        command += "\"";
    }
    std::string axes;
    for (std::size_t i = 0; i < values.size(); ++i) {
        axes += "  HOSTILE_" + std::to_string(i) + ": [" + yaml_quoted(values[i]) + "]\n";
        axes += "  p" + std::to_string(i) + ": [" + yaml_quoted(values[i]) + "]\n";
    }
    return "sweep: hostile\n"
           "target:\n"
           "  url: local\n"
           "  env_delivery: " +
           delivery +
           "\n"
           "workload:\n"
           "  command: " +
           command +
           "\n"
           "axes:\n" +
           axes + "timeouts:\n  stall: 60\n  total: 120\n";
}

/// Checks that the probe saw every value exactly, in the environment and in argv.
void check_probe(const TempDir& dir, const std::vector<std::string>& values,
                 const std::filesystem::path& pwned) {
    const std::string text = read_file(dir.path() / "out" / "1.json");
    INFO(text.substr(0, 2000));
    REQUIRE_FALSE(text.empty());
    const auto seen = nlohmann::json::parse(text);
    REQUIRE(seen["argv"].size() == values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        INFO("value " << i);
        CHECK(seen["argv"][i].get<std::string>() == values[i]);
        const std::string name = "HOSTILE_" + std::to_string(i);
        REQUIRE(seen["env"].contains(name));
        CHECK(seen["env"][name].get<std::string>() == values[i]);
    }
    CHECK_FALSE(std::filesystem::exists(pwned));
}

void run_hostile(const std::string& delivery, Form form) {
    TempDir dir;
    const auto pwned = dir.path() / "PWNED";
    const auto values = hostile_values(pwned);
    auto spec = dir.write("s.yaml", hostile_spec(dir, values, delivery, form));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 1);
    CHECK(experiments[0].outcome.status == results::ExperimentStatus::ok);
    check_probe(dir, values, pwned);
}

}  // namespace

TEST_CASE("hostile input: exact data through env delivery and a list command") {
    run_hostile("env", Form::list);
}

TEST_CASE("hostile input: exact data through sitecustomize.py and a /bin/sh string command") {
    run_hostile("sitecustomize", Form::string);
}

TEST_CASE("hostile input: exact data through both deliveries and a string command") {
    run_hostile("both", Form::string);
}

TEST_CASE(
    "hostile input: exact data in the remote command over ssh (env with a string command and sitecustomize "
    "with a list command)") {
    TestSshd sshd;
    if (!sshd.available) return;
    for (auto [delivery, form] :
         {std::pair{std::string("env"), Form::string}, std::pair{std::string("sitecustomize"), Form::list}}) {
        TempDir dir;
        const auto pwned = dir.path() / "PWNED";
        const auto values = hostile_values(pwned);
        auto spec = dir.write(
            "s.yaml", over_ssh(hostile_spec(dir, values, delivery, form), sshd, dir.path() / "remote"));
        std::string db = (dir.path() / "r.db").string();
        std::vector<std::string> args{"run", spec.string(), "--db", db};
        auto flags = sshd.flags();
        args.insert(args.end(), flags.begin(), flags.end());
        auto r = run_ncclsweep(args);
        INFO(delivery << ": " << r.err);
        REQUIRE(r.exit_code == 0);
        check_probe(dir, values, pwned);
    }
}

TEST_CASE("hostile input: NUL and malformed YAML and type errors are located with exit 2 and run nothing") {
    TempDir dir;
    const std::string head = "sweep: bad\nworkload:\n  command: [/bin/true]\naxes:\n";
    struct Case {
        std::string body;
        std::string where;  // file:line:col the message must start with
        std::string words;  // what the message must say
    };
    const std::vector<Case> cases{
        {head + "  HOSTILE: [\"a\\0b\"]\n", "s.yaml:5:", "NUL"},
        {head + "  p: [\"x\\0\"]\n", "s.yaml:5:", "NUL"},
        {"sweep: bad\nworkload:\n  command: [/bin/true\naxes:\n  p: [a]\n", "s.yaml:4:", "YAML syntax error"},
        {head + "  p: [a]\n  p: [b]\n", "s.yaml:6:", "appears twice"},
        {head + "  p: [a]\nrepeats: many\n", "s.yaml:6:10", "repeats"},
        {head + "  p: {a: 1}\n", "s.yaml:5:", "list"},
        {head + "  p: [a]\ntimeouts:\n  stall: -3\n", "s.yaml:7:", "stall"},
    };
    for (const auto& c : cases) {
        auto spec = dir.write("s.yaml", c.body);
        std::string db = (dir.path() / "r.db").string();
        auto r = run_ncclsweep({"run", spec.string(), "--db", db});
        INFO(c.body << "\n-> " << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(spec.string().substr(0, spec.string().size() - 6) + c.where) != std::string::npos);
        CHECK(r.err.find(c.words) != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(db));
    }
}
