// Calibration files: parsing, errors with line numbers, interpolation, setting keys.
#include <cmath>
#include <string>

#include "engine/sim/calibration.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify::sim;

namespace {
const char* const k_text = R"(# a comment
tpverify-calibration 1
setting            # NCCL's defaults
table all_reduce 8
14336 49.0
57344 201.6
setting NCCL_PROTO=LL NCCL_ALGO=ring
table all_reduce 8
14336 30
57344 120
)";
}  // namespace

TEST_CASE("sim calibration: parses settings and tables whose keys do not depend on the order") {
    Calibration c;
    std::string error;
    REQUIRE(Calibration::parse(k_text, "cal.txt", c, error));
    REQUIRE(c.tables().size() == 2);
    const CalibrationTable* base = c.find("", "all_reduce", 8);
    REQUIRE(base != nullptr);
    CHECK(base->points.size() == 2);
    CHECK(c.find("NCCL_ALGO=ring NCCL_PROTO=LL", "all_reduce", 8) != nullptr);
    CHECK(c.find("NCCL_PROTO=LL", "all_reduce", 8) == nullptr);
    CHECK(c.find("", "all_reduce", 4) == nullptr);
    CHECK(c.find("", "all_gather", 8) == nullptr);
    CHECK(setting_key({{"NCCL_PROTO", "LL"}, {"NCCL_ALGO", "ring"}, {"NCCL_DEBUG", "INFO"}}) ==
          "NCCL_ALGO=ring NCCL_PROTO=LL");
    CHECK(setting_key({{"NCCL_DEBUG_SUBSYS", "ALL"}, {"NCCL_COMM_ID", "h:1"}}).empty());
    // NCCL reads NCCL_P2P_LEVEL=3 as PHB: one setting, one table.
    CHECK(setting_key({{"NCCL_P2P_LEVEL", "3"}}) == setting_key({{"NCCL_P2P_LEVEL", "PHB"}}));
    CHECK(setting_key({{"NCCL_P2P_LEVEL", "phb"}}) == "NCCL_P2P_LEVEL=phb");  // not a level for NCCL
}

TEST_CASE("sim calibration: interpolation is exact at measured sizes and log-log between and none outside") {
    CalibrationTable t{"", "all_reduce", 8, {{1000, 10.0}, {4000, 40.0}, {16000, 80.0}}};
    CHECK(*interpolate(t, 1000) == 10.0);
    CHECK(*interpolate(t, 16000) == 80.0);
    CHECK(*interpolate(t, 2000) == Approx(20.0));  // a power law between 1000 and 4000: t ~ bytes
    CHECK(*interpolate(t, 8000) == Approx(40.0 * std::sqrt(2.0)));  // t ~ sqrt(bytes) between 4000 and 16000
    CHECK_FALSE(interpolate(t, 999).has_value());
    CHECK_FALSE(interpolate(t, 16001).has_value());
}

TEST_CASE("sim calibration: bad files say where and what to do") {
    Calibration c;
    std::string error;
    CHECK_FALSE(Calibration::parse("setting\n", "a.txt", c, error));
    CHECK(error.find("a.txt:1: expected the header") != std::string::npos);
    CHECK_FALSE(Calibration::parse("tpverify-calibration 2\n", "a.txt", c, error));
    CHECK(error.find("version 2") != std::string::npos);
    CHECK_FALSE(Calibration::parse("tpverify-calibration 1\ntable all_reduce 8\n", "a.txt", c, error));
    CHECK(error.find("a.txt:2: 'table' before any 'setting'") != std::string::npos);
    CHECK_FALSE(Calibration::parse("tpverify-calibration 1\nsetting\ntable all_reduce 8\n200 1\n100 2\n",
                                   "a.txt", c, error));
    CHECK(error.find("a.txt:5: sizes must increase") != std::string::npos);
    CHECK_FALSE(Calibration::parse("tpverify-calibration 1\nsetting\ntable all_reduce 8\n100 -1\n", "a.txt",
                                   c, error));
    CHECK(error.find("a.txt:4: expected 'BYTES MICROSECONDS'") != std::string::npos);
    CHECK_FALSE(Calibration::parse("tpverify-calibration 1\nsetting PROTO=LL\n", "a.txt", c, error));
    CHECK(error.find("not NCCL_NAME=VALUE") != std::string::npos);
    CHECK_FALSE(
        Calibration::parse("tpverify-calibration 1\nsetting\ntable all_reduce 8\n", "a.txt", c, error));
    CHECK(error.find("has no measurements") != std::string::npos);
    CHECK_FALSE(Calibration::load("/nonexistent/cal.txt", c, error));
    CHECK(error.find("cannot read") != std::string::npos);
}

TEST_CASE("sim calibration: builtin:incident-pcie is experiments/incident-pcie.calibration word for word") {
    const std::string file =
        ncclsweep::test::read_file(ncclsweep::test::source_path("experiments/incident-pcie.calibration"));
    CHECK(builtin_calibration("incident-pcie") == file);
    Calibration c;
    std::string error;
    REQUIRE(load_calibration("builtin:incident-pcie", c, error));
    const CalibrationTable* ar = c.find("", "all_reduce", 8);
    REQUIRE(ar != nullptr);
    // The published 30 ms verify less the sim's 9938.2 us of GPU work, over 124 collectives, less
    // the 1 us launch gap each (the derivation in the file).
    CHECK(*interpolate(*ar, 57344) == Approx((30000.0 - 9938.2) / 124 - 1).epsilon(0.001));
    CHECK_FALSE(load_calibration("builtin:nope", c, error));
    CHECK(error.find("no such built-in calibration") != std::string::npos);
}
