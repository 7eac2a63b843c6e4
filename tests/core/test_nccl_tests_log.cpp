// nccl-tests logs (real output of nccl-tests 2.19.6, tests/fixtures/nccl-tests/) -> calibration.
#include <string>

#include "core/nccl/nccl_tests_log.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::nccl;
using ncclsweep::test::read_file;
using ncclsweep::test::source_path;

namespace {
NcclTestsLog fixture(const std::string& name) {
    auto log = parse_nccl_tests_log(read_file(source_path("tests/fixtures/nccl-tests/" + name)), name);
    INFO((log ? std::string() : log.error().message));
    REQUIRE(log.ok());
    return *log;
}

/// An 8-rank all_gather log in nccl-tests 2.19's layout, with NCCL's env lines.
std::string eight_rank_all_gather() {
    std::string text =
        "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n"
        "# Collective test starting: all_gather_perf\n"
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20 agg "
        "iters: 1 "
        "validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n";
    for (int r = 0; r < 8; ++r)
        text += "#  Rank  " + std::to_string(r) + " Group  0 Pid   1234 on      box device  " +
                std::to_string(r) + " [0000:1" + std::to_string(r) +
                ":00] NVIDIA RTX PRO 6000 Blackwell Server Edition\n";
    text +=
        "#\nbox:1234:1234 [0] NCCL INFO NCCL_NTHREADS set by environment to 64.\n"
        "box:1234:1234 [0] NCCL INFO NCCL_PROTO set by environment to LL\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
        "algbw "
        "  busbw  #wrong\n"
        "      131072         32768     float    none      -1    41.10    3.19    2.79       0    40.90    "
        "3.20    "
        "2.80       0\n"
        "      458752        114688     float    none      -1    88.50    5.18    4.54       0    88.00    "
        "5.21    "
        "4.56       0\n";
    return text;
}
}  // namespace

TEST_CASE("nccl-tests log: real all_gather_perf output of nccl-tests 2.19.6") {
    const NcclTestsLog log = fixture("all_gather_default.log");
    CHECK(log.version == "2.19.6");
    CHECK(log.collective == "all_gather");
    CHECK(log.nranks == 1);  // recorded on a one-GPU machine
    CHECK_FALSE(log.graph);
    CHECK(log.setting.empty());
    REQUIRE(log.points.size() == 17);  // 16 B .. 1 MiB; the 0-byte row carries no time worth keeping
    CHECK(log.points.front() == std::pair<std::uint64_t, double>{16, 4.77});
    CHECK(log.points.back() == std::pair<std::uint64_t, double>{1048576, 5.20});
    CHECK(fixture("all_gather_graph.log").graph);
}

TEST_CASE("nccl-tests log: the setting comes from the command line or NCCL's env lines") {
    const NcclTestsLog ll = fixture("all_gather_proto_LL.log");
    REQUIRE(ll.setting.size() == 1);
    CHECK(ll.setting[0] == std::pair<std::string, std::string>{"NCCL_PROTO", "LL"});
    // NCCL_DEBUG=INFO output interleaved with the table; NCCL_DEBUG* is not a tuning setting.
    const NcclTestsLog debug = fixture("all_reduce_debug.log");
    CHECK(debug.collective == "all_reduce");
    CHECK(debug.setting.empty());
    REQUIRE(debug.points.size() == 18);
    CHECK(debug.points.front() == std::pair<std::uint64_t, double>{8, 4.95});
    CHECK(debug.points.back() == std::pair<std::uint64_t, double>{1048576, 6.03});

    auto eight = parse_nccl_tests_log(eight_rank_all_gather(), "ag8.log");
    REQUIRE(eight.ok());
    CHECK(eight->nranks == 8);
    REQUIRE(eight->setting.size() == 2);
    CHECK(eight->setting[0] ==
          std::pair<std::string, std::string>{"NCCL_NTHREADS", "64"});  // NCCL's '.' dropped
    CHECK(eight->setting[1] == std::pair<std::string, std::string>{"NCCL_PROTO", "LL"});
    // all_gather_perf prints the gathered size; the calibration counts one rank's input.
    REQUIRE(eight->points.size() == 2);
    CHECK(eight->points[0] == std::pair<std::uint64_t, double>{16384, 41.10});
    CHECK(eight->points[1] == std::pair<std::uint64_t, double>{57344, 88.50});
}

TEST_CASE("nccl-tests log: other files are refused with the reason") {
    auto text = parse_nccl_tests_log("hello\n", "notes.txt");
    REQUIRE_FALSE(text.ok());
    CHECK(text.error().message.find("notes.txt: no '# Collective test starting:' line") != std::string::npos);
    auto other = parse_nccl_tests_log("# Collective test starting: sendrecv_perf\n", "sr.log");
    REQUIRE_FALSE(other.ok());
    CHECK(other.error().message.find("all_reduce_perf and all_gather_perf only") != std::string::npos);
}

TEST_CASE("nccl-tests log: calibration text groups by setting and refuses two logs for one") {
    const NcclTestsLog base = fixture("all_gather_default.log");
    const NcclTestsLog ll = fixture("all_gather_proto_LL.log");
    auto text = calibration_text({base, ll, fixture("all_reduce_debug.log")});
    REQUIRE(text.ok());
    CHECK(text->rfind("tpverify-calibration 1\n", 0) == 0);
    CHECK(text->find("\nsetting NCCL_PROTO=LL\ntable all_gather 1") != std::string::npos);
    CHECK(text->find("\n16 4.77\n") != std::string::npos);
    CHECK(text->find("table all_reduce 1") != std::string::npos);
    auto twice = calibration_text({base, fixture("all_gather_graph.log")});
    REQUIRE_FALSE(twice.ok());
    CHECK(twice.error().message.find("keep one of them") != std::string::npos);
}

TEST_CASE("nccl-tests log: a directory of logs with other files skipped and the reason said") {
    ncclsweep::test::TempDir dir;
    dir.write("a_default.log", read_file(source_path("tests/fixtures/nccl-tests/all_gather_default.log")));
    dir.write("README", "not a log\n");
    std::vector<std::string> skipped;
    auto logs = read_nccl_tests_dir(dir.path(), skipped);
    REQUIRE(logs.ok());
    CHECK(logs->size() == 1);
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].find("README") != std::string::npos);
    auto missing = read_nccl_tests_dir(dir.path() / "nope", skipped);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find("not a directory") != std::string::npos);
}
