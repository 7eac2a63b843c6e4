// NCCL knowledge: value syntax, ranges, warnings, combinations (core/nccl/nccl.hpp).
#include <algorithm>

#include "core/nccl/nccl.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/text.hpp"

using namespace ncclsweep;
using ncclsweep::test::contains;
using namespace ncclsweep::nccl;

namespace {

bool has_code(const std::vector<Finding>& findings, const std::string& code, Severity severity) {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Finding& f) { return f.code == code && f.severity == severity; });
}

bool has_error(const std::vector<Finding>& findings) {
    return std::any_of(findings.begin(), findings.end(),
                       [](const Finding& f) { return f.severity == Severity::error; });
}

const Finding* find_code(const std::vector<Finding>& findings, const std::string& code) {
    for (const auto& f : findings)
        if (f.code == code) return &f;
    return nullptr;
}

WorkloadContext small_pcie() {
    return {14336, std::string("pcie-gen5")};
}

}  // namespace

TEST_CASE("NCCL_ALGO accepts algorithm lists, ^ and per-collective syntax in any case") {
    for (const char* value :
         {"Ring", "ring", "RING", "Tree,Ring", "ring,tree", "^tree", "CollnetDirect", "collnetchain", "NVLS",
          "nvlstree", "PAT", "allreduce:tree", "AllReduce:Tree", "ring;allreduce:tree",
          "ring,tree;allreduce:tree", "allreduce:ring;allgather:ring", "allreduce:^tree",
          "ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring", "reducescatter:pat"}) {
        INFO(value);
        CHECK_FALSE(has_error(check_value("NCCL_ALGO", value)));
    }
}

TEST_CASE("NCCL_ALGO rejects unknown tokens, collectives and misplaced entries with the accepted names") {
    auto f = check_value("NCCL_ALGO", "ring,rnig");
    REQUIRE(has_code(f, "bad-value", Severity::error));
    CHECK(contains(f[0].message, "\"rnig\""));
    CHECK(contains(f[0].message, "collnetdirect, collnetchain, nvls"));  // accepted list named
    CHECK(f[0].variable == "NCCL_ALGO");

    f = check_value("NCCL_ALGO", "sendrecv:ring");
    REQUIRE(has_error(f));
    CHECK(contains(f[0].message, "\"sendrecv\""));
    CHECK(contains(f[0].message, "allreduce"));

    CHECK(has_error(check_value("NCCL_ALGO", "allreduce:tree;ring")));  // prefix-less entry not first
    CHECK(has_error(check_value("NCCL_ALGO", "ring, tree")));           // NCCL does not strip spaces
    CHECK(contains(check_value("NCCL_ALGO", "ring, tree")[0].message, "spaces"));
    CHECK(has_error(check_value("NCCL_ALGO", "allreduce:")));
    CHECK(has_error(check_value("NCCL_ALGO", ":tree")));
    CHECK(has_error(check_value("NCCL_ALGO", "allreduce:tree:ring")));
    // Per-collective entries are ';'-separated (NCCL's parseList); a ',' joins them into one
    // entry NCCL refuses, and the message shows the value that works.
    f = check_value("NCCL_ALGO", "allreduce:tree,allgather:ring");
    REQUIRE(has_error(f));
    CHECK(contains(f[0].message, "separate entries with ';', e.g. \"allreduce:tree;allgather:ring\""));
    CHECK_FALSE(has_error(check_value("NCCL_ALGO", "allreduce:tree;allgather:ring")));
    CHECK_FALSE(contains(check_value("NCCL_ALGO", "allreduce:tree:ring")[0].message, "e.g."));
    CHECK(has_error(check_value("NCCL_ALGO", "ring,^tree")));
}

TEST_CASE("bare NCCL_ALGO=Tree warns that every collective is restricted and suggests allreduce:tree") {
    for (const char* value : {"Tree", "tree", "TREE", "^ring,collnetdirect,collnetchain,nvls,nvlstree,pat"}) {
        INFO(value);
        auto f = check_value("NCCL_ALGO", value);
        REQUIRE(has_code(f, "bare-tree", Severity::warning));
        const auto* bare = find_code(f, "bare-tree");
        CHECK(contains(bare->message, "every collective"));
        CHECK(contains(bare->message, "AllGather"));
        CHECK(contains(bare->message, "capture"));
        CHECK(contains(bare->message, "allreduce:tree"));
    }
    CHECK(check_value("NCCL_ALGO", "allreduce:tree").empty());
    CHECK(check_value("NCCL_ALGO", "ring;allreduce:tree").empty());
    CHECK(check_value("NCCL_ALGO", "ring,tree").empty());
    // A per-collective tree for a collective without Tree is a different problem.
    auto f = check_value("NCCL_ALGO", "broadcast:tree");
    CHECK(has_code(f, "algo-unavailable", Severity::warning));
    CHECK_FALSE(has_code(f, "bare-tree", Severity::warning));
    // NVLS exists for AllGather/ReduceScatter/AllReduce only.
    CHECK(has_code(check_value("NCCL_ALGO", "nvls"), "algo-unavailable", Severity::warning));
}

TEST_CASE("NCCL_PROTO accepts LL, LL128, Simple with ^ and prefixes") {
    for (const char* value : {"LL", "ll128", "Simple", "LL,Simple", "^LL128", "simple;allreduce:ll",
                              "LL,Simple;allreduce:^LL", "^LL128;allreduce:LL128"}) {
        INFO(value);
        CHECK_FALSE(has_error(check_value("NCCL_PROTO", value)));
    }
    auto f = check_value("NCCL_PROTO", "LL256");
    REQUIRE(has_error(f));
    CHECK(contains(f[0].message, "LL256"));
    CHECK(contains(f[0].message, "ll, ll128, simple"));
}

TEST_CASE("NCCL_NTHREADS must be a multiple of 32 in 64..512") {
    for (const char* value : {"64", "96", "128", "256", "512"})
        CHECK(check_value("NCCL_NTHREADS", value).empty());
    for (const char* value : {"32", "100", "544", "0", "-64", "abc", "256x", "1024"}) {
        INFO(value);
        auto f = check_value("NCCL_NTHREADS", value);
        REQUIRE(has_error(f));
        CHECK(contains(f[0].message, "NCCL_NTHREADS="));
    }
    CHECK(contains(check_value("NCCL_NTHREADS", "100")[0].message, "multiple of 32"));
}

TEST_CASE("channel counts are 1..64 under both the new and the deprecated names") {
    for (const char* name : {"NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}) {
        INFO(name);
        CHECK(check_value(name, "1").empty());
        CHECK(check_value(name, "64").empty());
        CHECK(has_code(check_value(name, "0"), "out-of-range", Severity::error));
        CHECK(has_code(check_value(name, "65"), "out-of-range", Severity::error));
    }
}

TEST_CASE("MIN <= MAX is checked after merging old and new channel names") {
    WorkloadContext big{16u << 20, std::string("pcie-gen5")};
    auto f = check_environment({{"NCCL_MIN_CTAS", "16"}, {"NCCL_MAX_CTAS", "8"}}, big);
    CHECK(has_code(f, "channels-min-gt-max", Severity::error));
    // Deprecated MAX is more restrictive (2) than the new one (32): min 4 > max 2.
    f = check_environment({{"NCCL_MIN_CTAS", "4"}, {"NCCL_MAX_CTAS", "32"}, {"NCCL_MAX_NCHANNELS", "2"}},
                          big);
    CHECK(has_code(f, "channels-min-gt-max", Severity::error));
    CHECK(has_code(f, "channels-both-names", Severity::warning));
    // Deprecated MIN is the stricter (larger) minimum.
    f = check_environment({{"NCCL_MIN_NCHANNELS", "16"}, {"NCCL_MIN_CTAS", "1"}, {"NCCL_MAX_CTAS", "8"}},
                          big);
    CHECK(has_code(f, "channels-min-gt-max", Severity::error));
    f = check_environment({{"NCCL_MIN_NCHANNELS", "2"}, {"NCCL_MAX_NCHANNELS", "16"}}, big);
    CHECK_FALSE(has_error(f));
    // A later assignment of the same name overrides an earlier one.
    f = check_environment({{"NCCL_MIN_CTAS", "32"}, {"NCCL_MIN_CTAS", "1"}, {"NCCL_MAX_CTAS", "2"}}, big);
    CHECK_FALSE(has_error(f));
}

TEST_CASE("NCCL_P2P_LEVEL accepts level names and 0..5") {
    for (const char* value : {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS", "0", "5"})
        CHECK(check_value("NCCL_P2P_LEVEL", value).empty());
    CHECK(has_code(check_value("NCCL_P2P_LEVEL", "sys"), "wrong-case", Severity::error));
    CHECK(has_error(check_value("NCCL_P2P_LEVEL", "6")));
    CHECK(has_error(check_value("NCCL_P2P_LEVEL", "NVLINK")));
}

TEST_CASE("booleans, sizes and numbers are read the way NCCL reads them") {
    CHECK(check_value("NCCL_P2P_DISABLE", "1").empty());
    CHECK(check_value("NCCL_SHM_DISABLE", "0").empty());
    auto f = check_value("NCCL_P2P_DISABLE", "true");
    REQUIRE(has_error(f));
    CHECK(contains(f[0].message, "write 1"));
    CHECK(has_error(check_value("NCCL_IB_DISABLE", "2")));
    CHECK(check_value("NCCL_BUFFSIZE", "4194304").empty());
    CHECK(check_value("NCCL_BUFFSIZE", "0x400000").empty());
    CHECK(has_code(check_value("NCCL_BUFFSIZE", "3000000"), "not-power-of-two", Severity::warning));
    CHECK(has_error(check_value("NCCL_BUFFSIZE", "0")));
    CHECK(has_error(check_value("NCCL_BUFFSIZE", "-4")));
    f = check_value("NCCL_BUFFSIZE", "4M");
    REQUIRE(has_error(f));
    CHECK(contains(f[0].message, "4M"));
    CHECK(has_code(check_value("NCCL_LL128_BUFFSIZE", "0131072"), "octal", Severity::error));
    CHECK(has_code(check_value("NCCL_ALGO", ""), "empty-value", Severity::warning));
}

TEST_CASE("NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_LAUNCH_MODE") {
    for (const char* value : {"VERSION", "WARN", "INFO", "TRACE", "ABORT", "info"})
        CHECK(check_value("NCCL_DEBUG", value).empty());
    CHECK(has_error(check_value("NCCL_DEBUG", "DEBUG")));
    CHECK(check_value("NCCL_DEBUG_SUBSYS", "INIT,TUNING,ENV").empty());
    CHECK(check_value("NCCL_DEBUG_SUBSYS", "^INIT,NET").empty());
    CHECK(check_value("NCCL_DEBUG_SUBSYS", "ALL").empty());
    CHECK(has_code(check_value("NCCL_DEBUG_SUBSYS", "INIT,TUNNING"), "unknown-subsys", Severity::warning));
    CHECK(check_value("NCCL_LAUNCH_MODE", "GROUP").empty());
    CHECK(has_error(check_value("NCCL_LAUNCH_MODE", "SERIAL")));
}

TEST_CASE("free-form variables accept any text, non-NCCL names yield nothing") {
    CHECK(check_value("NCCL_SOCKET_IFNAME", "^docker,lo").empty());
    CHECK(check_value("NCCL_TOPO_FILE", "/tmp/topo with space.xml").empty());
    CHECK(check_value("NCCL_TUNER_CONFIG_FILE", "$(touch x)").empty());
    CHECK(check_value("CUDA_VISIBLE_DEVICES", "garbage").empty());
    CHECK(check_value("PYTHONPATH", "").empty());
    CHECK(check_value("NCCLX", "1").empty());
}

TEST_CASE("unknown NCCL_* names warn with a did-you-mean") {
    auto f = check_value("NCCL_ALOG", "ring");
    REQUIRE(f.size() == 1);
    CHECK(f[0].code == "unknown-var");
    CHECK(f[0].severity == Severity::warning);
    CHECK(contains(f[0].message, "did you mean NCCL_ALGO?"));
    CHECK(contains(check_value("NCCL_MAX_NCHANNEL", "4")[0].message, "NCCL_MAX_NCHANNELS"));
    CHECK(contains(check_value("NCCL_algo", "ring")[0].message, "case-sensitive"));
    auto far = check_value("NCCL_COMPLETELY_UNRELATED_THING", "1");
    REQUIRE(far.size() == 1);
    CHECK_FALSE(contains(far[0].message, "did you mean"));
}

TEST_CASE("known_variables is sorted and covers the documented knobs") {
    auto names = known_variables();
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
    for (const char* name :
         {"NCCL_ALGO", "NCCL_PROTO", "NCCL_NTHREADS", "NCCL_MIN_CTAS", "NCCL_MAX_NCHANNELS", "NCCL_P2P_LEVEL",
          "NCCL_BUFFSIZE", "NCCL_LL128_BUFFSIZE", "NCCL_DEBUG_SUBSYS", "NCCL_TUNER_CONFIG_FILE",
          "NCCL_RUNTIME_CONNECT", "NCCL_WORK_FIFO_DEPTH"})
        CHECK(std::find(names.begin(), names.end(), name) != names.end());
}

TEST_CASE("LL128 forced on PCIe warns, on NVLink or unknown topology it does not") {
    WorkloadContext pcie{16u << 20, std::string("pcie-gen4")};
    auto f = check_environment({{"NCCL_PROTO", "LL128"}}, pcie);
    REQUIRE(has_code(f, "ll128-pcie", Severity::warning));
    CHECK(contains(find_code(f, "ll128-pcie")->message, "corruption"));
    // A ^-list that does not exclude LL128 forces it on as well.
    CHECK(has_code(check_environment({{"NCCL_PROTO", "^LL"}}, pcie), "ll128-pcie", Severity::warning));
    CHECK_FALSE(
        has_code(check_environment({{"NCCL_PROTO", "^LL128"}}, pcie), "ll128-pcie", Severity::warning));
    CHECK_FALSE(
        has_code(check_environment({{"NCCL_PROTO", "LL,Simple"}}, pcie), "ll128-pcie", Severity::warning));
    CHECK_FALSE(has_code(check_environment({{"NCCL_PROTO", "LL128"}}, {16u << 20, std::string("nvlink")}),
                         "ll128-pcie", Severity::warning));
    CHECK_FALSE(has_code(check_environment({{"NCCL_PROTO", "LL128"}}, {}), "ll128-pcie", Severity::warning));
}

TEST_CASE("knobs NCCL ignores for small messages are flagged at <= 64 KiB only") {
    std::vector<Assignment> env = {{"NCCL_MIN_CTAS", "16"},     {"NCCL_MAX_CTAS", "16"},
                                   {"NCCL_MIN_NCHANNELS", "2"}, {"NCCL_MAX_NCHANNELS", "16"},
                                   {"NCCL_NTHREADS", "512"},    {"NCCL_BUFFSIZE", "131072"}};
    auto f = check_environment(env, small_pcie());
    CHECK(std::count_if(f.begin(), f.end(), [](const Finding& x) { return x.code == "ignored-small"; }) == 6);
    const auto* buff = &*std::find_if(f.begin(), f.end(), [](const Finding& x) {
        return x.code == "ignored-small" && x.variable == "NCCL_BUFFSIZE";
    });
    CHECK(contains(buff->message, "Simple"));
    CHECK(contains(buff->message, "NCCL_LL_BUFFSIZE"));
    CHECK(contains(find_code(f, "ignored-small")->message, "channels"));
    // Exactly 64 KiB is still small; one byte more is not.
    CHECK(has_code(check_environment({{"NCCL_NTHREADS", "256"}}, {65536, std::nullopt}), "ignored-small",
                   Severity::warning));
    CHECK(check_environment({{"NCCL_NTHREADS", "256"}}, {65537, std::nullopt}).empty());
    CHECK(check_environment({{"NCCL_NTHREADS", "256"}}, {}).empty());
    // With Simple forced, BUFFSIZE does matter.
    f = check_environment({{"NCCL_PROTO", "Simple"}, {"NCCL_BUFFSIZE", "131072"}}, small_pcie());
    CHECK_FALSE(has_code(f, "ignored-small", Severity::warning));
}

TEST_CASE("buffer sizes for a disabled protocol and impossible ALGO/PROTO pairs are flagged") {
    WorkloadContext big{16u << 20, std::nullopt};
    auto f = check_environment({{"NCCL_PROTO", "LL"}, {"NCCL_BUFFSIZE", "131072"}}, big);
    CHECK(has_code(f, "buffsize-unused", Severity::warning));
    f = check_environment({{"NCCL_PROTO", "^LL128"}, {"NCCL_LL128_BUFFSIZE", "131072"}}, big);
    CHECK(has_code(f, "buffsize-unused", Severity::warning));
    CHECK(check_environment({{"NCCL_PROTO", "LL"}, {"NCCL_LL_BUFFSIZE", "131072"}}, big).empty());
    f = check_environment({{"NCCL_ALGO", "allreduce:nvls"}, {"NCCL_PROTO", "LL"}}, big);
    CHECK(has_code(f, "no-algo-proto", Severity::warning));
    CHECK(contains(find_code(f, "no-algo-proto")->message, "AllReduce"));
    CHECK(check_environment({{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "LL"}}, big).empty());
    f = check_environment({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_P2P_LEVEL", "SYS"}}, big);
    CHECK(has_code(f, "p2p-level-ignored", Severity::warning));
}

TEST_CASE("check_environment reports per-value findings in order, then combinations, deterministically") {
    std::vector<Assignment> env = {{"NCCL_ALGO", "Tree"},         {"NCCL_NTHREADS", "100"},
                                   {"CUDA_VISIBLE_DEVICES", "0"}, {"NCCL_PROTOO", "LL"},
                                   {"NCCL_MIN_CTAS", "8"},        {"NCCL_MAX_CTAS", "4"},
                                   {"NCCL_PROTO", "LL128"}};
    auto first = check_environment(env, small_pcie());
    auto second = check_environment(env, small_pcie());
    REQUIRE(first.size() == second.size());
    for (std::size_t i = 0; i < first.size(); ++i) CHECK(first[i].message == second[i].message);
    std::vector<std::string> codes;
    for (const auto& f : first) codes.push_back(f.code);
    std::vector<std::string> expected = {"bare-tree",           "out-of-range", "unknown-var",
                                         "channels-min-gt-max", "ll128-pcie",   "ignored-small",
                                         "ignored-small",       "ignored-small"};
    CHECK(codes == expected);
}

TEST_CASE("hostile values are shown escaped in messages") {
    auto f = check_value("NCCL_ALGO", "ring\n$(touch x)\x1b[31m");
    REQUIRE(has_error(f));
    CHECK_FALSE(contains(f[0].message, "\n"));
    CHECK_FALSE(contains(f[0].message, "\x1b"));
    CHECK(contains(f[0].message, "\\x0a"));
}
