// tpverify --measure-collectives' calibration files: the text it writes (measurement_text) and
// the files recorded on a real H200 (tests/fixtures/tpverify-measure/, README there), read by
// the sim (--calibration) at one rank. The measurement itself needs a GPU: the CTest `gpu`
// test (tests/engine/gpu_tpverify.sh) runs it and feeds the result to the sim.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/sim/calibration.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify;
using namespace tpverify::sim;
using ncclsweep::test::binary_path;
using ncclsweep::test::CommandResult;
using ncclsweep::test::read_file;
using ncclsweep::test::run_command;
using ncclsweep::test::source_path;

namespace {

const char* const k_fixtures = "tests/fixtures/tpverify-measure/";

std::string fixture(const std::string& name) {
    return read_file(source_path(std::string(k_fixtures) + name));
}

Calibration parsed(const std::string& text, const std::string& name) {
    Calibration c;
    std::string error;
    INFO(error);
    REQUIRE(Calibration::parse(text, name, c, error));
    return c;
}

double at(const Calibration& c, const std::string& setting, const std::string& collective,
          std::uint64_t bytes) {
    const CalibrationTable* t = c.find(setting, collective, 1);
    REQUIRE(t != nullptr);
    auto us = interpolate(*t, bytes);
    REQUIRE(us.has_value());
    return *us;
}

std::string result_field(const CommandResult& r, const std::string& key) {
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) {
        if (l.rfind("{\"event\":\"result\"", 0) != 0) continue;
        const std::string k = "\"" + key + "\":";
        auto p = l.find(k);
        if (p == std::string::npos) return "";
        p += k.size();
        if (l[p] == '"') return l.substr(p + 1, l.find('"', p + 1) - p - 1);
        return l.substr(p, l.find_first_of(",}", p) - p);
    }
    return "";
}

// A one-rank pass under --server none: bare NCCL calls its collectives at one rank, as the
// recordings measured them (under --server sglang, the default, one rank calls none).
CommandResult simulate(const std::string& calibration, const std::vector<std::string>& env = {},
                       const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {binary_path("engine/tpverify").string(),
                                     "--backend",
                                     "sim",
                                     "--json",
                                     "--tp",
                                     "1",
                                     "--server",
                                     "none",
                                     "--tokens",
                                     "4",
                                     "--calibration",
                                     calibration};
    args.insert(args.end(), more.begin(), more.end());
    return run_command(args, {}, env);
}

}  // namespace

TEST_CASE("measure collectives: the text parses back with in-place times as comments") {
    Measurement m;
    m.notes = {"Measured by 'tpverify --backend cuda --measure-collectives'", "machine: 2 x test GPU"};
    m.setting = setting_key({{"NCCL_PROTO", "LL"}, {"NCCL_DEBUG", "INFO"}, {"NCCL_VERSION", "2.28.3-1"}});
    m.nranks = 2;
    m.tables = {{"all_reduce", {{1024, 5.25, 4.5}, {57344, 12.125, 11}}}, {"all_gather", {{1024, 6, 5}}}};
    const std::string text = measurement_text(m);
    CHECK(text.rfind("# Measured by", 0) == 0);
    CHECK(text.find("setting NCCL_PROTO=LL\n") != std::string::npos);  // NCCL_DEBUG, NCCL_VERSION dropped
    CHECK(text.find("57344 12.125   # in-place 11.000\n") != std::string::npos);
    const Calibration c = parsed(text, "m.txt");
    REQUIRE(c.tables().size() == 2);
    const CalibrationTable* t = c.find("NCCL_PROTO=LL", "all_reduce", 2);
    REQUIRE(t != nullptr);
    CHECK(t->points == std::vector<std::pair<std::uint64_t, double>>{{1024, 5.25}, {57344, 12.125}});
    // NCCL's defaults: a bare 'setting' line.
    m.setting = "";
    CHECK(parsed(measurement_text(m), "d.txt").has_setting(""));
}

TEST_CASE("measure collectives: the sizes are the pass's collectives and 1 KiB to 1 MiB") {
    Options o;
    ModelShape model;
    std::string error;
    REQUIRE(resolve_model(o, model, error));
    const PassPlan verify = build_pass(model, 8, 4);
    const PassPlan baseline = build_pass(model, 8, 1);
    const std::vector<std::uint64_t> sizes = measurement_sizes({&verify, &baseline});
    for (std::uint64_t b = 1024; b <= 1048576; b *= 2) CHECK(std::count(sizes.begin(), sizes.end(), b) == 1);
    CHECK(std::count(sizes.begin(), sizes.end(), verify.all_reduce_bytes()) == 1);    // 57344
    CHECK(std::count(sizes.begin(), sizes.end(), baseline.all_reduce_bytes()) == 1);  // 14336
    CHECK(std::count(sizes.begin(), sizes.end(), verify.all_gather_bytes()) == 1);
    CHECK(std::is_sorted(sizes.begin(), sizes.end()));
}

TEST_CASE("measure collectives: concatenated files are one calibration and a second table is refused") {
    const std::string two = fixture("h200_default.txt") + fixture("h200_proto_LL.txt");
    const Calibration c = parsed(two, "two.txt");
    CHECK(c.has_setting(""));
    CHECK(c.has_setting("NCCL_PROTO=LL"));
    Calibration again;
    std::string error;
    CHECK_FALSE(Calibration::parse(two + fixture("h200_default.txt"), "three.txt", again, error));
    CHECK(error.find("a second table for all_reduce at 1 ranks under NCCL's defaults") != std::string::npos);
}

TEST_CASE("measure collectives: the H200 recordings hold the pass's sizes as one-rank tables") {
    for (const char* name :
         {"h200_default.txt", "h200_proto_LL.txt", "h200_proto_Simple.txt", "h200_default_eager.txt"}) {
        INFO(name);
        const std::string text = fixture(name);
        CHECK(text.find("# machine: 1 x NVIDIA H200 (of 1 visible), NCCL 2.28.3") != std::string::npos);
        const Calibration c = parsed(text, name);
        REQUIRE(c.tables().size() == 2);
        for (const CalibrationTable& t : c.tables()) {
            CHECK(t.nranks == 1);
            CHECK(t.points.front().first == 1024);
            CHECK(t.points.size() == 16);  // 11 powers of two and 5 sizes of the kimi-k2.5 passes
        }
    }
    // At one rank NCCL runs an out-of-place collective as one device-to-device copy: about a
    // microsecond per call replayed in a graph, 5-7 us launched eagerly.
    const Calibration graph = parsed(fixture("h200_default.txt"), "g");
    const Calibration eager = parsed(fixture("h200_default_eager.txt"), "e");
    const double g = at(graph, "", "all_reduce", 57344);
    CHECK(g > 0.5);
    CHECK(g < 2);
    CHECK(at(eager, "", "all_reduce", 57344) > 3 * g);
}

TEST_CASE("measure collectives: the sim prices a one-rank pass from the H200 recording") {
    const std::string file = source_path(std::string(k_fixtures) + "h200_default.txt").string();
    const CommandResult r = simulate(file);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(result_field(r, "collective_times") == "calibrated");
    CHECK(result_field(r, "calibrated_collectives") == "124");
    // 123 all-reduces of 57344 B and the logits all-gather of 1310720 B, as measured, plus the
    // sim's 1 us launch gap per collective inside a graph (docs/engine.md).
    const Calibration c = parsed(fixture("h200_default.txt"), "h200_default.txt");
    const double expected =
        123 * at(c, "", "all_reduce", 57344) + at(c, "", "all_gather", 1310720) + 124 * 1.0;
    CHECK(std::stod(result_field(r, "comm_pass_us")) == Approx(expected).epsilon(1e-6));
}

TEST_CASE("measure collectives: the sim ranks NCCL settings as the H200 measurement does") {
    ncclsweep::test::TempDir dir;
    const std::vector<std::pair<std::string, std::string>> settings = {
        {"", "h200_default.txt"},
        {"NCCL_PROTO=LL", "h200_proto_LL.txt"},
        {"NCCL_PROTO=Simple", "h200_proto_Simple.txt"}};
    std::string all;
    for (const auto& s : settings) all += fixture(s.second);
    const auto file = dir.write("h200.txt", all);
    const Calibration c = parsed(all, "h200.txt");
    // The measured cost of a 4-token kimi-k2.5 pass's collectives under each setting, and the
    // sim's comm_pass_us under the same environment: the same order.
    std::vector<std::pair<double, double>> measured_and_sim;
    for (const auto& [setting, name] : settings) {
        const double measured =
            123 * at(c, setting, "all_reduce", 57344) + at(c, setting, "all_gather", 1310720);
        std::vector<std::string> env;
        if (!setting.empty()) env.push_back(setting);
        const CommandResult r = simulate(file.string(), env);
        INFO(name << "\n" << r.out << r.err);
        REQUIRE(r.exit_code == 0);
        CHECK(result_field(r, "collective_times") == "calibrated");
        measured_and_sim.emplace_back(measured, std::stod(result_field(r, "comm_pass_us")));
    }
    for (std::size_t i = 0; i < measured_and_sim.size(); ++i)
        for (std::size_t j = 0; j < measured_and_sim.size(); ++j)
            if (measured_and_sim[i].first < measured_and_sim[j].first)
                CHECK(measured_and_sim[i].second < measured_and_sim[j].second);
    // On this one-GPU recording NCCL's defaults were the fastest (NCCL_PROTO does not apply to
    // a one-rank copy; the settings differ by the run-to-run spread, under 2 %).
    CHECK(measured_and_sim[0].second < measured_and_sim[1].second);
    CHECK(measured_and_sim[0].second < measured_and_sim[2].second);
    CHECK(measured_and_sim[1].first < 1.02 * measured_and_sim[0].first);
}
