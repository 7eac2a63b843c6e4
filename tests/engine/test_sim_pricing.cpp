// Pricing (engine/sim/pricing.hpp, one_shot.hpp): a calibration is keyed by NCCL's effective
// choice, a choice it did not measure is priced relative to the measured reference, nothing is
// priced by the model beside measurements without saying so, and the fused kernel costs what
// the published one-shot measurements say.
#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "engine/sim/calibration.hpp"
#include "engine/sim/one_shot.hpp"
#include "engine/sim/pricing.hpp"
#include "tests/engine/sim_env.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify;
using namespace tpverify::sim;
using tpverify::sim::testing::env_of;

namespace {
Calibration calibration_of(const std::string& text) {
    Calibration c;
    std::string error;
    INFO(error);
    REQUIRE(Calibration::parse(text, "cal.txt", c, error));
    return c;
}
std::string key_of(const std::map<std::string, std::string>& vars) {
    return setting_key({vars.begin(), vars.end()});
}
// Prices one 57 KB all-reduce over 8 ranks of `topo` under `vars` with `cal`.
Price price_of(const Calibration& cal, const std::map<std::string, std::string>& vars,
               const TopologyModel& topo = topology_model(Topology::pcie_gen5), std::uint64_t bytes = 57344) {
    const Comm run(topo, env_of(vars), 8);
    const Comm defaults(topo, env_of({}), 8);
    const CalibrationIndex index(cal, topo, key_of(vars), 8);
    Pricer pricer(run, defaults, &index);
    return pricer.collective(Func::all_reduce, bytes, run.choose(Func::all_reduce, bytes));
}
const std::string k_defaults_only =
    "tpverify-calibration 1\nsetting\ntable all_reduce 8\n14336 43.0\n57344 169.9\n";
}  // namespace

TEST_CASE(
    "sim pricing: NCCL_PROTO=LL is NCCL's default choice here, so it is priced from the defaults' table") {
    // The incident's table is of NCCL's defaults: Ring/LL on one channel through SHM at 57 KB. A
    // run with NCCL_PROTO=LL makes the same choice; its setting is spelled differently, its price
    // is the same measurement (the old lookup by the NCCL_* string priced it by the model instead).
    const Calibration cal = calibration_of(k_defaults_only);
    const Price defaults = price_of(cal, {});
    const Price ll = price_of(cal, {{"NCCL_PROTO", "LL"}});
    CHECK(defaults.source == PriceSource::calibrated);
    CHECK(defaults.us == 169.9);
    CHECK(ll.source == PriceSource::calibrated);
    CHECK(ll.us == 169.9);
    // NCCL_MAX_CTAS=1 too: NCCL cuts the default to one channel at this size anyway.
    CHECK(price_of(cal, {{"NCCL_MAX_CTAS", "1"}}).source == PriceSource::calibrated);
}

TEST_CASE("sim pricing: a choice not measured is priced relative to the measured reference") {
    const Calibration cal = calibration_of(k_defaults_only);
    const TopologyModel topo = topology_model(Topology::pcie_gen5);
    const Comm defaults(topo, env_of({}), 8);
    const double reference_model = defaults.choose(Func::all_reduce, 57344).time_us;
    // NCCL_NTHREADS=64: 2 channels of 96 threads, not measured; NCCL's estimate is the same as the
    // reference's, so the price is the measurement's.
    const Price nt64 = price_of(cal, {{"NCCL_NTHREADS", "64"}});
    CHECK(nt64.source == PriceSource::relative);
    CHECK(nt64.us == Approx(169.9));
    // Tree/LL and Simple: model(choice) / model(reference) x measured(reference).
    for (const auto& vars : std::vector<std::map<std::string, std::string>>{{{"NCCL_ALGO", "allreduce:tree"}},
                                                                            {{"NCCL_PROTO", "Simple"}}}) {
        const Comm run(topo, env_of(vars), 8);
        const double model = run.choose(Func::all_reduce, 57344).time_us;
        const Price p = price_of(cal, vars);
        CHECK(p.source == PriceSource::relative);
        CHECK(p.us == Approx(model / reference_model * 169.9));
        CHECK(p.us > 169.9);  // NCCL's own ranking: both are slower than its default here
    }
    // Outside the measured sizes there is no reference: NCCL's estimate, labelled modelled.
    const Price big = price_of(cal, {}, topo, 1 << 20);
    CHECK(big.source == PriceSource::modelled);
    CHECK(big.us == defaults.choose(Func::all_reduce, 1 << 20).time_us);
}

TEST_CASE("sim pricing: a table of the run's own setting wins, tables stand for the choice at each size") {
    // Two tables that make the same choice at 57 KB (LL is the default there): each run gets its
    // own, so measurements of two spellings of one choice are not mixed.
    const Calibration cal =
        calibration_of(k_defaults_only + "setting NCCL_PROTO=LL\ntable all_reduce 8\n57344 150\n");
    CHECK(price_of(cal, {}).us == 169.9);
    CHECK(price_of(cal, {{"NCCL_PROTO", "LL"}}).us == 150);
    // A table measured at 32 KiB and 64 KiB (nccl-tests' powers of two): NCCL uses one channel at
    // 32 KiB and 57 KiB, two at 64 KiB, and the table's curve between them is what NCCL ran for its
    // setting, so 57 KiB is interpolated (log size, log time) from it.
    const Calibration powers =
        calibration_of("tpverify-calibration 1\nsetting\ntable all_reduce 8\n32768 100\n65536 200\n");
    const Price p = price_of(powers, {});
    CHECK(p.source == PriceSource::calibrated);
    CHECK(p.us == Approx(100 * std::pow(2.0, std::log2(57344.0 / 32768))));
}

TEST_CASE("sim pricing: a calibration measured on another machine does not price this one") {
    TopoMatrix one_switch, two_socket;
    std::string error;
    const auto fixture = [](const char* name) {
        return ncclsweep::test::read_file(
            ncclsweep::test::source_path(std::string("tests/fixtures/topo/") + name));
    };
    REQUIRE(parse_topo_matrix(fixture("one-switch-8gpu-handwritten.txt"), "a", one_switch, error));
    REQUIRE(parse_topo_matrix(fixture("pcie-2socket-4090-gpuallocator-17.txt"), "b", two_socket, error));
    std::string block = "topology switch.txt\n";
    std::istringstream in(fixture("one-switch-8gpu-handwritten.txt"));
    for (std::string line; std::getline(in, line);) block += "| " + line + "\n";
    const Calibration cal = calibration_of("tpverify-calibration 1\n" + block +
                                           "setting\ntable all_reduce 8\n14336 20.0\n57344 26.0\n");
    REQUIRE(cal.topology().has_value());
    CHECK(cal.topology()->source == "switch.txt");
    const TopologyModel base = topology_model(Topology::pcie_gen5);
    CHECK(price_of(cal, {}, with_matrix(base, one_switch)).source == PriceSource::calibrated);
    const Price elsewhere = price_of(cal, {}, with_matrix(base, two_socket));
    CHECK(elsewhere.source == PriceSource::modelled);
    CHECK(price_of(cal, {}, base).source == PriceSource::modelled);  // the built-in machine: not that box
    const CalibrationIndex index(cal, with_matrix(base, two_socket), "", 8);
    CHECK_FALSE(index.applies());
    CHECK(index.why_not().find("measured on switch.txt") != std::string::npos);
}

TEST_CASE("sim pricing: a calibration's topology block is read as nvidia-smi printed it, errors by line") {
    Calibration c;
    std::string error;
    CHECK_FALSE(
        Calibration::parse("tpverify-calibration 1\ntopology box.txt\n|\tGPU0\tGPU1\n| GPU0\t X \tPIX\n"
                           "| GPU1\tPIX\t X \tPIX\n| GPU1\tPIX\t X \n",
                           "cal.txt", c, error));
    CHECK(error == "cal.txt:6: a second row for GPU1 (the first is line 5)");
    CHECK_FALSE(Calibration::parse("tpverify-calibration 1\ntopology\n", "cal.txt", c, error));
    CHECK(error.find("cal.txt:2: expected 'topology NAME'") == 0);
    // A setting NCCL would refuse cannot be a measured table.
    CHECK_FALSE(
        Calibration::parse("tpverify-calibration 1\nsetting NCCL_PROTO=LL129\n", "cal.txt", c, error));
    CHECK(error.find("cal.txt:2: NCCL refuses this setting") == 0);
}

TEST_CASE("sim pricing: the fused kernel costs what the published one-shot measurements say") {
    const TopologyModel pcie = topology_model(Topology::pcie_gen5);
    const Comm eight(pcie, env_of({}), 8);
    // 8 x RTX PRO 6000 behind PCIe switches: 16.5 us at 32 KiB, 25.9 at 64 KiB; 57 KiB in between.
    const OneShotPrice at57 = one_shot_price(pcie, eight, 57344);
    CHECK(at57.measured);
    CHECK(at57.us == Approx(std::exp(std::log(16.5) + std::log2(57344.0 / 32768) * std::log(25.9 / 16.5))));
    CHECK(at57.us > 16.5);
    CHECK(at57.us < 25.9);
    CHECK(one_shot_price(pcie, eight, 32768).us == 16.5);
    CHECK(one_shot_price(pcie, eight, 262144).us == 73.6);
    CHECK(at57.source.find("voipmonitor/rtx6kpro") != std::string::npos);
    // 4 ranks: the 4-GPU measurement (14.0 us at 64 KiB).
    CHECK(one_shot_price(pcie, Comm(pcie, env_of({}), 4), 65536).us == 14.0);
    // Nothing measured: the estimate, said as such.
    const OneShotPrice outside = one_shot_price(pcie, eight, 1 << 20);
    CHECK_FALSE(outside.measured);
    CHECK(outside.us == eight.one_shot_model_us(1 << 20));
    const TopologyModel nvl = topology_model(Topology::nvlink);
    const OneShotPrice h200 = one_shot_price(nvl, Comm(nvl, env_of({}), 8), 57344);
    CHECK_FALSE(h200.measured);
    CHECK(h200.source.find("no published one-shot measurement") != std::string::npos);
    // Beside NCCL on the same machine, the one-shot ties at 64 KiB (25.9 vs 24.1) and wins below.
    for (const OneShotTable& t : one_shot_tables()) REQUIRE(t.points.size() == t.nccl_us.size());
    CHECK(one_shot_tables()[0].points[4].second > one_shot_tables()[0].nccl_us[4]);
    CHECK(one_shot_tables()[0].points[3].second < one_shot_tables()[0].nccl_us[3]);
}
