// tpverify --describe --json: the schema ncclsweep checks specs against must say what the
// engine's own parser accepts. Every described flag is tried at its limits through
// parse_options, and every flag of --help must be described.
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/run/backend.hpp"
#include "engine/run/describe.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify;

namespace {

/// parse_options over `--name=value` (plus what the flag needs to be valid on its own).
std::string parse_error(const std::string& name, const std::string& value) {
    std::vector<std::string> args = {"tpverify", "--" + name + "=" + value};
    if (name == "rank") args.push_back("--nranks=1024");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    return parse_options(static_cast<int>(argv.size()), argv.data()).error;
}

std::string text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

TEST_CASE("describe: every described value is accepted by the parser and values outside are refused") {
    for (const auto& p : parameter_schema()) {
        INFO("--" << p.name << " (" << p.type << ")");
        if (p.type == "enum" || p.type == "bool") {
            REQUIRE_FALSE(p.values.empty());
            for (const auto& v : p.values) CHECK(parse_error(p.name, v).empty());
            if (p.name == "model") {
                // Any name parses; resolve_model refuses the ones that are not presets.
                Options o;
                o.model = "maybe";
                ModelShape shape;
                std::string error;
                CHECK_FALSE(resolve_model(o, shape, error));
            } else {
                CHECK_FALSE(parse_error(p.name, "maybe").empty());
            }
        } else if (p.type == "int") {
            CHECK(parse_error(p.name, text(p.min)).empty());
            CHECK(parse_error(p.name, text(p.max)).empty());
            CHECK_FALSE(parse_error(p.name, text(p.min - 1)).empty());
            CHECK_FALSE(parse_error(p.name, text(p.max + 1)).empty());
            CHECK_FALSE(parse_error(p.name, "1.5").empty());
        } else if (p.type == "number") {
            CHECK(parse_error(p.name, text(p.min)).empty());
            CHECK(parse_error(p.name, text(p.max)).empty());
            CHECK_FALSE(parse_error(p.name, text(p.min > 0 ? p.min / 2 : -1)).empty());
            CHECK_FALSE(parse_error(p.name, text(p.max * 2)).empty());
        } else {
            CHECK(p.type == "text");
        }
    }
    CHECK(parse_error("inject", "hang").empty());
}

TEST_CASE("describe: every flag of --help is described - and only those") {
    std::set<std::string> in_help;
    const std::string help = usage();
    const std::regex flag(R"(--([a-z][a-z0-9-]*))");
    for (auto it = std::sregex_iterator(help.begin(), help.end(), flag); it != std::sregex_iterator(); ++it)
        in_help.insert((*it)[1].str());
    for (const char* own :
         {"help", "json", "describe", "flag", "measure-collectives", "measure-kernels", "validate"})
        in_help.erase(own);
    std::set<std::string> described;
    for (const auto& p : parameter_schema()) described.insert(p.name);
    CHECK(described == in_help);
}

TEST_CASE("describe: the JSON names every parameter and metric with its unit and direction") {
    const std::string json = describe_json("sim");
    CHECK(json.find("\"engine\":\"tpverify\"") != std::string::npos);
    CHECK(json.find("\"auto_backend\":\"sim\"") != std::string::npos);
    CHECK(
        json.find(
            "{\"name\":\"topology\",\"type\":\"enum\",\"values\":[\"pcie-gen4\",\"pcie-gen5\",\"nvlink\"]") !=
        std::string::npos);
    CHECK(json.find("{\"name\":\"tok_s\",\"unit\":\"tok/s\",\"better\":\"higher\"}") != std::string::npos);
    CHECK(json.find("{\"name\":\"verify_us_p50\",\"unit\":\"us\",\"better\":\"lower\"}") !=
          std::string::npos);
    for (const auto& m : metric_schema()) CHECK((m.better == "higher" || m.better == "lower"));
}

TEST_CASE("describe: every assumption of the sim's prices has a source, and docs/engine.md lists it") {
    const std::string docs = ncclsweep::test::read_file(ncclsweep::test::source_path("docs/engine.md"));
    const std::string json = describe_json("sim");
    const std::string text = describe_text();
    REQUIRE(sim_assumptions().size() >= 10);
    std::set<std::string> names;
    for (const SimAssumption& a : sim_assumptions()) {
        INFO(a.name);
        CHECK(names.insert(a.name).second);
        CHECK_FALSE(a.value.empty());
        CHECK_FALSE(a.source.empty());
        CHECK(json.find("{\"name\":\"" + a.name + "\",\"value\":") != std::string::npos);
        CHECK(text.find("\n  " + a.name + "\n") != std::string::npos);
        CHECK(docs.find("`" + a.name + "`") != std::string::npos);
    }
    // The channel-share term is gone: nothing scales bandwidth by the channels a call keeps.
    CHECK(text.find("the channels the per-call cut keeps do not change it") != std::string::npos);
}
