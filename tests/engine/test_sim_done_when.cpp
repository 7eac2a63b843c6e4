// The sim's promises, through the real tpverify binary: fusion only where it can run, NCCL's
// reading of NCCL_P2P_LEVEL, --backend auto says when it simulates, calibrations decide the
// ranking, NCCL-like lines are marked, noise differs per experiment and repeat.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/text.hpp"

using ncclsweep::test::binary_path;
using ncclsweep::test::CommandResult;
using ncclsweep::test::contains;
using ncclsweep::test::run_command;

namespace {
CommandResult done_when_run(std::vector<std::string> args, const std::vector<std::string>& env = {},
                            const std::string& backend = "sim") {
    args.insert(args.begin(), binary_path("engine/tpverify").string());
    args.insert(args.begin() + 1, "--backend=" + backend);
    return run_command(args, {}, env);
}
std::string event_line(const CommandResult& r, const std::string& event) {
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);)
        if (l.rfind("{\"event\":\"" + event + "\"", 0) == 0) return l;
    return "";
}
std::string event_field(const std::string& line, const std::string& key) {
    const std::string k = "\"" + key + "\":";
    auto at = line.find(k);
    if (at == std::string::npos) return "";
    auto start = at + k.size();
    if (line[start] == '"') return line.substr(start + 1, line.find('"', start + 1) - start - 1);
    return line.substr(start, line.find_first_of(",}", start) - start);
}
double number(const CommandResult& r, const std::string& key) {
    const std::string v = event_field(event_line(r, "result"), key);
    INFO(r.out << r.err);
    REQUIRE(!v.empty());
    return std::stod(v);
}
const std::vector<std::string> k_pass = {"--json", "--tp", "8", "--tokens", "4"};
std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}
}  // namespace

TEST_CASE("sim done-when: without peer access fusion on and off are the same pass (ratio <= 1.05)") {
    const std::vector<std::string> no_peer = {"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1"};
    const CommandResult off = done_when_run(with(k_pass, {"--fusion", "off"}), no_peer);
    const CommandResult on = done_when_run(with(k_pass, {"--fusion", "on"}), no_peer);
    REQUIRE(on.exit_code == 0);
    const double ratio = number(on, "tok_s") / number(off, "tok_s");
    CHECK(ratio <= 1.05);
    CHECK(ratio >= 1 / 1.05);
    // Said in the start event and on stderr, like the CUDA backend's fallback.
    const std::string start = event_line(on, "start");
    CHECK(event_field(start, "fused") == "false");
    CHECK(contains(event_field(start, "fusion_fallback"), "NCCL_P2P_DISABLE=1"));
    CHECK(contains(on.err, "falling back to NCCL all-reduce"));
    // With peer access (the default machine) the fused kernel runs, at the published one-shot
    // price (23.7 us at 57 KB on 8 x RTX PRO 6000; it ties NCCL there, so the pass gains little).
    const CommandResult fused = done_when_run(with(k_pass, {"--fusion", "on"}));
    CHECK(event_field(event_line(fused, "start"), "fused") == "true");
    CHECK(number(fused, "fused_us") == Approx(23.745).epsilon(0.001));
    CHECK(event_field(event_line(fused, "result"), "fused_price") == "measured");
    CHECK(number(fused, "tok_s") > number(done_when_run(k_pass), "tok_s"));
    // More ranks than the one-shot kernel supports: NCCL fallback.
    const CommandResult sixteen = done_when_run({"--json", "--tp", "16", "--fusion", "on"});
    CHECK(contains(event_field(event_line(sixteen, "start"), "fusion_fallback"), "at most 8 ranks"));
}

TEST_CASE("sim done-when: NCCL_P2P_LEVEL=3 and NCCL_P2P_LEVEL=PHB give the same pass") {
    const double by_number = number(done_when_run(k_pass, {"NCCL_P2P_LEVEL=3"}), "verify_us_p50");
    const double by_name = number(done_when_run(k_pass, {"NCCL_P2P_LEVEL=PHB"}), "verify_us_p50");
    CHECK(std::fabs(by_number / by_name - 1) <= 0.005);
    // ... and it is a different pass from NCCL's default level (SHM instead of P2P).
    const CommandResult def = done_when_run(k_pass);
    CHECK(event_field(event_line(def, "result"), "transport") == "SHM/direct/direct");
    CHECK(event_field(event_line(done_when_run(k_pass, {"NCCL_P2P_LEVEL=3"}), "result"), "transport") ==
          "P2P/CUMEM");
    CHECK(std::fabs(number(def, "verify_us_p50") / by_name - 1) > 0.005);
}

TEST_CASE(
    "sim done-when: --backend auto without a GPU says on stderr and in the start event that it simulates") {
    // CUDA_VISIBLE_DEVICES="" hides any GPU, so this holds on a GPU host too.
    const CommandResult r = done_when_run(k_pass, {"CUDA_VISIBLE_DEVICES="}, "auto");
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "--backend auto"));
    CHECK(contains(r.err, "SIMULATION"));
    const std::string start = event_line(r, "start");
    CHECK(event_field(start, "backend") == "sim");
    CHECK(!event_field(start, "backend_fallback").empty());
    // Asked for explicitly, the sim does not warn.
    const CommandResult explicit_sim = done_when_run(k_pass);
    CHECK_FALSE(contains(explicit_sim.err, "SIMULATION"));
    CHECK(event_field(event_line(explicit_sim, "start"), "backend_fallback").empty());
}

TEST_CASE(
    "sim done-when: a calibration decides by NCCL's effective choice, and every price says what it rests "
    "on") {
    ncclsweep::test::TempDir dir;
    // Measured on a (pretend) machine where NCCL_PROTO=LL with one channel is slower than the
    // default's LL... which is the same choice: at 57 KB NCCL's default is Ring/LL on one channel.
    // Tables of two spellings of one choice: each run takes its own setting's measurement.
    const auto file = dir.write("cal.txt",
                                "tpverify-calibration 1\n"
                                "setting\n"
                                "table all_reduce 8\n16384 60\n57344 250\n"
                                "table all_gather 8\n16384 60\n163840 400\n"
                                "setting NCCL_PROTO=LL\n"
                                "table all_reduce 8\n16384 40\n57344 90\n"
                                "table all_gather 8\n16384 40\n163840 300\n");
    const auto cal = with(k_pass, {"--calibration", file.string(), "--draft-steps", "0"});
    const CommandResult base = done_when_run(cal);
    const CommandResult ll = done_when_run(cal, {"NCCL_PROTO=LL"});
    REQUIRE(base.exit_code == 0);
    REQUIRE(ll.exit_code == 0);
    CHECK(number(ll, "comm_pass_us") < 0.6 * number(base, "comm_pass_us"));
    CHECK(number(ll, "tok_s") > 1.3 * number(base, "tok_s"));
    CHECK(event_field(event_line(ll, "result"), "collective_times") == "calibrated");
    CHECK(number(ll, "calibrated_collectives") == 124);
    CHECK(number(ll, "relative_collectives") == 0);
    // NCCL_MAX_CTAS=1 makes the default's choice for the 57 KB all-reduces (NCCL cuts them to one
    // channel anyway), not for the 160 KB all-gather (two channels by default): 123 calls are the
    // default's measurement, one is relative, and the label is the weakest.
    const CommandResult one_channel = done_when_run(cal, {"NCCL_MAX_CTAS=1"});
    CHECK(event_field(event_line(one_channel, "result"), "collective_times") == "relative");
    CHECK(number(one_channel, "calibrated_collectives") == 123);
    CHECK(number(one_channel, "relative_collectives") == 1);
    // Without the calibration the sim's model is NCCL's own estimate and says so.
    const std::string model = event_line(done_when_run(k_pass, {"NCCL_PROTO=LL"}), "result");
    CHECK(event_field(model, "collective_times") == "modelled");
    CHECK(contains(event_field(model, "calibration_note"), "NCCL 2.28's own tuning estimate"));
    // A choice the calibration never measured is priced relative to the measured default.
    const CommandResult simple_run = done_when_run(cal, {"NCCL_PROTO=Simple"});
    const std::string simple = event_line(simple_run, "result");
    CHECK(event_field(simple, "collective_times") == "relative");
    CHECK(number(simple_run, "relative_collectives") == 124);
    CHECK(contains(event_field(simple, "calibration_note"),
                   "priced relative to the measured AllReduce 57344 B"));
    CHECK(number(simple_run, "comm_pass_us") > number(base, "comm_pass_us"));
    // Sizes outside the measured range have no reference: NCCL's estimate, and the point is modelled.
    const std::string small =
        event_line(done_when_run({"--json", "--tp", "8", "--tokens", "1", "--draft-steps", "0",
                                  "--calibration", file.string()}),
                   "result");
    CHECK(event_field(small, "collective_times") == "modelled");
    CHECK(contains(event_field(small, "calibration_note"), "nothing measured for AllReduce at 14336 B"));
    // The draft pass counts too: its 1-token collectives were not measured.
    const std::string with_draft =
        event_line(done_when_run(with(k_pass, {"--calibration", file.string()})), "result");
    CHECK(event_field(with_draft, "collective_times") == "modelled");
    // A bad file is a usage error that names the line.
    const auto bad = dir.write("bad.txt", "tpverify-calibration 1\nsetting\ntable all_reduce 8\n100\n");
    const CommandResult refused = done_when_run(with(k_pass, {"--calibration", bad.string()}));
    CHECK(refused.exit_code == 2);
    CHECK(contains(refused.err, "bad.txt:4:"));
}

TEST_CASE("sim done-when: the sim's NCCL-like lines carry a visible marker") {
    const CommandResult r =
        done_when_run(k_pass, {"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV", "NCCL_PROTO=LL"});
    REQUIRE(r.exit_code == 0);
    std::istringstream in(r.out);
    int nccl_lines = 0;
    for (std::string l; std::getline(in, l);) {
        if (!contains(l, " NCCL ") || l.rfind("{", 0) == 0) continue;  // JSON events may mention NCCL
        ++nccl_lines;
        CHECK(l.rfind("[tpverify-sim] ", 0) == 0);
    }
    CHECK(nccl_lines > 5);
    CHECK(contains(r.out, "NCCL INFO NCCL version 2.28.3+sim"));
}

TEST_CASE("sim done-when: noise differs between experiments and repeats and reproduces") {
    const auto seeded = with(k_pass, {"--seed", "1", "--noise", "0.02"});
    const double a = number(done_when_run(seeded, {"NCCL_MAX_NCHANNELS=2"}), "verify_us_p50");
    const double b = number(done_when_run(seeded, {"NCCL_MAX_NCHANNELS=4"}), "verify_us_p50");
    CHECK(a != b);  // same modeled pass (2 channels are the default), different experiments
    CHECK(a == number(done_when_run(seeded, {"NCCL_MAX_NCHANNELS=2"}), "verify_us_p50"));
    const double r1 = number(done_when_run(seeded, {"NCCLSWEEP_REPEAT=1"}), "verify_us_p50");
    const double r2 = number(done_when_run(seeded, {"NCCLSWEEP_REPEAT=2"}), "verify_us_p50");
    CHECK(r1 != r2);
    // The per-run offset moves whole runs: five repeats spread by more than the per-sample jitter
    // alone would move a median of 50 samples (0.01 / sqrt(50) ~ 0.0014).
    double lo = 1e300, hi = 0;
    for (int rep = 0; rep < 5; ++rep) {
        const double p50 =
            number(done_when_run(seeded, {"NCCLSWEEP_REPEAT=" + std::to_string(rep)}), "verify_us_p50");
        lo = std::min(lo, p50);
        hi = std::max(hi, p50);
    }
    CHECK(hi / lo - 1 > 0.005);
}
