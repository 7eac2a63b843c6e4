// libnccl-tuner-ncclsweep.so loaded with dlopen and driven through NCCL's v5 tuner ABI the way
// src/enqueue.cc drives it (tests/tuner/tuner_harness.hpp): what it changes, what it leaves to
// NCCL, what it logs, and that no profile can make it fail or crash.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/tuner/tuner_harness.hpp"

using namespace ncclsweep::test;

namespace {

constexpr std::size_t k_mb100 = 100u * 1024 * 1024;

std::string profile(const std::string& rules) {
    return "# written by hand for a test\nncclsweep-tuner-profile 1\n"
           "# collective min_bytes max_bytes nranks nnodes algorithm protocol channels\n" +
           rules;
}

/// Points NCCLSWEEP_TUNER_PROFILE at a file holding `text` in `dir`; clears the captured log.
std::string use_profile(const TempDir& dir, const std::string& text) {
    auto path = dir.write("profile.txt", text).string();
    tuner_log().clear();
    ::setenv("NCCLSWEEP_TUNER_PROFILE", path.c_str(), 1);
    return path;
}

}  // namespace

TEST_CASE("tuner plugin: loads through dlsym(ncclTunerPlugin_v5) and needs nothing but libc") {
    TunerPlugin plugin;
    INFO(plugin.error());
    REQUIRE(plugin.tuner() != nullptr);
    CHECK(std::string(plugin.tuner()->name) == "ncclsweep");
    CHECK(plugin.tuner()->init != nullptr);
    CHECK(plugin.tuner()->get_coll_info != nullptr);
    CHECK(plugin.tuner()->finalize != nullptr);

    // NEEDED entries: libc only, so it loads into any process on a bare GPU host (a sanitizer
    // build adds its runtimes, libasan/libubsan, and nothing else).
    auto needed = run_command({"sh", "-c", "readelf -d \"$0\" | grep NEEDED", NCCLSWEEP_TUNER_PLUGIN_PATH});
    INFO(needed.out << needed.err);
    REQUIRE(needed.exit_code == 0);
    CHECK(needed.out.find("[libc.so.6]") != std::string::npos);
    std::size_t others = 0;
    for (std::size_t at = needed.out.find('['); at != std::string::npos; at = needed.out.find('[', at + 1)) {
        const std::string library = needed.out.substr(at + 1, needed.out.find(']', at) - at - 1);
        if (library != "libc.so.6" && library.rfind("libasan.", 0) != 0 && library.rfind("libubsan.", 0) != 0)
            ++others;
    }
    CHECK(others == 0);
    // Exported symbols: the plugin table only (the parser stays internal).
    auto symbols = run_command({"sh", "-c", "nm -D --defined-only \"$0\"", NCCLSWEEP_TUNER_PLUGIN_PATH});
    REQUIRE(symbols.exit_code == 0);
    CHECK(symbols.out.find("ncclTunerPlugin_v5") != std::string::npos);
    CHECK(symbols.out.find("nst_profile") == std::string::npos);
}

TEST_CASE(
    "tuner plugin: a measured all-reduce gets the profile's algorithm and protocol and channels stay "
    "NCCL's") {
    TempDir dir;
    auto path = use_profile(dir, profile("allreduce 57344 57344 8 1 tree ll 0\n"));
    TunerPlugin plugin;
    REQUIRE(plugin.tuner() != nullptr);
    TunerComm comm(plugin.tuner(), 8, 1);
    REQUIRE(comm.init_result() == nst_success);
    CHECK(logged_with("ncclsweep tuner: profile " + path + " loaded: 1 rules, 1 for nRanks 8 nNodes 1")
              .size() == 1);

    // NCCL alone would take ring/LL (20.6 < 20.8): the rule turns it into tree/LL.
    REQUIRE(cheapest(pcie_table(), 0).algo == nst_algo_ring);
    auto chosen = comm.select(nst_func_all_reduce, 57344, pcie_table());
    CHECK(chosen.algo == nst_algo_tree);
    CHECK(chosen.proto == nst_proto_ll);
    CHECK(chosen.channels == 0);
    auto applied = logged_with("ncclsweep tuner: AllReduce 57344 bytes -> algo TREE proto LL channels 0 (" +
                               path + ":4)");
    REQUIRE(applied.size() == 1);
    CHECK(applied[0].level == nst_log_info);
    CHECK((applied[0].flags & nst_subsys_tuning) != 0);

    // Everything the sweep did not measure is untouched: table and channels as NCCL made them.
    for (auto [func, bytes] :
         {std::pair{nst_func_all_reduce, k_mb100}, std::pair{nst_func_all_reduce, std::size_t{57343}},
          std::pair{nst_func_all_reduce, std::size_t{57345}},
          std::pair{nst_func_all_gather, std::size_t{1310720}},
          std::pair{nst_func_all_gather, std::size_t{57344}},
          std::pair{nst_func_reduce_scatter, std::size_t{57344}}}) {
        CostTable table = pcie_table();
        int channels = 0;
        REQUIRE(comm.call(func, bytes, table, channels) == nst_success);
        INFO("func " << func << " bytes " << bytes);
        CHECK(table == pcie_table());
        CHECK(channels == 0);
    }
    CHECK(logged_with("->").size() == 1);
}

TEST_CASE("tuner plugin: other rank or node counts are left to NCCL") {
    TempDir dir;
    use_profile(dir, profile("allreduce 0 1000000 8 1 tree ll 0\n"));
    TunerPlugin plugin;
    REQUIRE(plugin.tuner() != nullptr);
    for (auto [ranks, nodes] : {std::pair<std::size_t, std::size_t>{4, 1}, {16, 2}, {8, 2}}) {
        TunerComm comm(plugin.tuner(), ranks, nodes);
        REQUIRE(comm.init_result() == nst_success);
        CostTable table = pcie_table();
        int channels = 0;
        REQUIRE(comm.call(nst_func_all_reduce, 57344, table, channels) == nst_success);
        CHECK(table == pcie_table());
        CHECK(channels == 0);
    }
    CHECK(logged_with(" 0 for nRanks 4 nNodes 1").size() == 1);
}

TEST_CASE(
    "tuner plugin: channels are set only where the profile names a count and the first matching rule wins") {
    TempDir dir;
    use_profile(dir, profile("allreduce 0 65536 8 1 ring simple 4\n"
                             "allreduce 0 1000000 8 1 tree ll 0\n"
                             "allgather 1310720 1310720 8 1 ring ll 2\n"));
    TunerPlugin plugin;
    REQUIRE(plugin.tuner() != nullptr);
    TunerComm comm(plugin.tuner(), 8, 1);
    auto small = comm.select(nst_func_all_reduce, 65536, pcie_table());
    CHECK(small.algo == nst_algo_ring);
    CHECK(small.proto == nst_proto_simple);
    CHECK(small.channels == 4);
    auto larger = comm.select(nst_func_all_reduce, 65537, pcie_table());
    CHECK(larger.algo == nst_algo_tree);
    CHECK(larger.channels == 0);
    auto gather = comm.select(nst_func_all_gather, 1310720, pcie_table());
    CHECK(gather.algo == nst_algo_ring);
    CHECK(gather.proto == nst_proto_ll);
    CHECK(gather.channels == 2);
}

TEST_CASE("tuner plugin: a combination NCCL marks ignored is left alone and reported once") {
    TempDir dir;
    auto path = use_profile(dir, profile("allreduce 0 100000 8 1 ring ll128 0\n"
                                         "allgather 0 100000 8 1 pat simple 3\n"));
    TunerPlugin plugin;
    REQUIRE(plugin.tuner() != nullptr);
    TunerComm comm(plugin.tuner(), 8, 1);
    for (int round = 0; round < 3; ++round)
        for (nst_func_t func : {nst_func_all_reduce, nst_func_all_gather}) {
            CostTable table = pcie_table();
            int channels = 0;
            REQUIRE(comm.call(func, 57344, table, channels) == nst_success);
            CHECK(table == pcie_table());
            CHECK(channels == 0);  // no channel count without the algorithm it was measured with
        }
    auto said = logged_with("which NCCL does not offer here");
    REQUIRE(said.size() == 2);
    CHECK(said[0].text == "ncclsweep tuner: AllReduce 57344 bytes: " + path +
                              ":4 asks for RING/LL128, which NCCL does not offer here (cost -1); left to "
                              "NCCL (said once per rule)");
    CHECK(said[1].text.find("AllGather 57344 bytes: " + path + ":5 asks for PAT/SIMPLE") !=
          std::string::npos);
    CHECK(logged_with("->").empty());
}

TEST_CASE("tuner plugin: a bad or missing profile is one WARN and NCCL defaults and never a failure") {
    TempDir dir;
    struct Case {
        std::string text;
        std::string says;
    };
    const std::string long_line(2000, 'x');
    const Case cases[] = {
        {"", "no version line"},
        {"# only comments\n\n", "no version line"},
        {"allreduce 0 10 8 1 ring ll 0\n",
         "line 1: expected the version line 'ncclsweep-tuner-profile 1' first"},
        {"ncclsweep-tuner-profile 2\n", "line 1: expected the version line"},
        {profile("allreduce 0 10 8 1 rnig ll 0\n"), "line 4: unknown algorithm 'rnig' (accepted: tree ring"},
        {profile("allreduce 0 10 8 1 ring l1 0\n"), "line 4: unknown protocol 'l1'"},
        {profile("all_reduce 0 10 8 1 ring ll 0\n"), "line 4: unknown collective 'all_reduce'"},
        {profile("allreduce 10 0 8 1 ring ll 0\n"),
         "line 4: byte range '10 0' is not two whole numbers min <= max"},
        {profile("allreduce -1 10 8 1 ring ll 0\n"), "line 4: byte range"},
        {profile("allreduce 0 99999999999999999999999 8 1 ring ll 0\n"), "line 4: byte range"},
        {profile("allreduce 0 10 0 1 ring ll 0\n"), "line 4: nranks '0'"},
        {profile("allreduce 0 10 8 x ring ll 0\n"), "line 4: nnodes 'x'"},
        {profile("allreduce 0 10 8 1 ring ll 65\n"), "line 4: channels '65' is not a whole number 0..64"},
        {profile("allreduce 0 10 8 1 ring ll -1\n"), "line 4: channels '-1'"},
        {profile("allreduce 0 10 8 1 ring ll\n"), "line 4: 7 fields, expected 8"},
        {profile("allreduce 0 10 8 1 ring ll 0 extra more\n"), "line 4: 10 fields, expected 8"},
        {profile("allreduce,0,10,8,1,ring,ll,0\n"), "line 4: 1 fields, expected 8"},
        {profile("allreduce 0 10 8 1 ring ll 0\n" + long_line + "\n"), "line 5: longer than 1024 characters"},
        {profile(std::string("allreduce 0 10 8 1 ring ll 0\n\x01\x02\n")), "line 5: control byte 0x01"},
        {profile(std::string("allreduce 0 10\0 8 1 ring ll 0\n", 30)), "line 4: control byte 0x00"},
    };
    TunerPlugin plugin;
    REQUIRE(plugin.tuner() != nullptr);
    for (const auto& c : cases) {
        tuner_log().clear();
        auto path = use_profile(dir, c.text);
        TunerComm comm(plugin.tuner(), 8, 1);
        INFO(c.says);
        REQUIRE(comm.init_result() == nst_success);
        auto warned = logged_with("ncclsweep tuner: profile " + path + " rejected: ");
        REQUIRE(warned.size() == 1);
        CHECK(warned[0].level == nst_log_warn);
        CHECK(warned[0].text.find(c.says) != std::string::npos);
        CHECK(warned[0].text.find("every collective is left to NCCL") != std::string::npos);
        // Whatever parsed before the error is dropped: the first rule above would match this.
        CostTable table = pcie_table();
        int channels = 0;
        REQUIRE(comm.call(nst_func_all_reduce, 5, table, channels) == nst_success);
        CHECK(table == pcie_table());
        CHECK(channels == 0);
    }

    // A file that is not there, a directory, too many rules, an unset variable.
    std::string many = "";
    for (int i = 0; i < 257; ++i) many += "allreduce 0 10 8 1 ring ll 0\n";
    for (const auto& [value, says] :
         {std::pair<std::string, std::string>{(dir.path() / "missing.txt").string(),
                                              "cannot open it: No such file"},
          {dir.path().string(), "not a regular file"},
          {dir.write("many.txt", profile(many)).string(), "line 260: more than 256 rules"}}) {
        tuner_log().clear();
        ::setenv("NCCLSWEEP_TUNER_PROFILE", value.c_str(), 1);
        TunerComm comm(plugin.tuner(), 8, 1);
        REQUIRE(comm.init_result() == nst_success);
        auto warned = logged_with(" rejected: ");
        REQUIRE(warned.size() == 1);
        INFO(warned[0].text);
        CHECK(warned[0].text.find(says) != std::string::npos);
    }
    tuner_log().clear();
    ::unsetenv("NCCLSWEEP_TUNER_PROFILE");
    TunerComm unset(plugin.tuner(), 8, 1);
    REQUIRE(unset.init_result() == nst_success);
    auto warned = logged_with("NCCLSWEEP_TUNER_PROFILE is not set");
    REQUIRE(warned.size() == 1);
    CHECK(warned[0].level == nst_log_warn);
    CostTable table = pcie_table();
    int channels = 0;
    REQUIRE(unset.call(nst_func_all_reduce, 57344, table, channels) == nst_success);
    CHECK(table == pcie_table());
}

TEST_CASE("tuner plugin: a FIFO named as the profile is refused at once and never waited on") {
    // NCCL calls init while creating a communicator: a blocking open of a FIFO nobody writes
    // would hang it. The plugin opens the profile O_NONBLOCK and reads only a regular file.
    TempDir dir;
    const std::string fifo = (dir.path() / "profile.fifo").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    TunerPlugin plugin;
    REQUIRE(plugin.tuner() != nullptr);
    // Rescue for a plugin that does block (the behaviour this test exists to catch): a writer
    // opens and closes the FIFO after a long wait, so the test fails on the message instead of
    // hanging; a plugin that does not block never needs it.
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::thread rescue([&] {
        std::unique_lock lock(mutex);
        if (done_cv.wait_for(lock, std::chrono::seconds(120), [&] { return done; })) return;
        const int fd = ::open(fifo.c_str(), O_WRONLY);
        if (fd >= 0) ::close(fd);
    });
    tuner_log().clear();
    ::setenv("NCCLSWEEP_TUNER_PROFILE", fifo.c_str(), 1);
    {
        TunerComm comm(plugin.tuner(), 8, 1);
        {
            std::lock_guard lock(mutex);
            done = true;
        }
        done_cv.notify_all();
        rescue.join();
        REQUIRE(comm.init_result() == nst_success);
        auto warned = logged_with(" rejected: ");
        REQUIRE(warned.size() == 1);
        INFO(warned[0].text);
        CHECK(warned[0].text.find("not a regular file") != std::string::npos);
    }
    ::unsetenv("NCCLSWEEP_TUNER_PROFILE");
}

TEST_CASE(
    "tuner plugin: comments and blank lines and CRLF and any case are read and communicators are "
    "independent") {
    TempDir dir;
    use_profile(dir,
                "\r\n# ncclsweep export\r\n  ncclsweep-tuner-profile 1\r\n\r\n\tAllReduce 0 100 2 1 NVLSTree "
                "SIMPLE 0\r\n");
    TunerPlugin plugin;
    REQUIRE(plugin.tuner() != nullptr);
    TunerComm a(plugin.tuner(), 2, 1);
    TunerComm b(plugin.tuner(), 2, 1);
    CostTable table = pcie_table();
    table[nst_algo_nvls_tree][nst_proto_simple] = 500.0f;
    CHECK(a.select(nst_func_all_reduce, 100, table).algo == nst_algo_nvls_tree);
    CHECK(b.select(nst_func_all_reduce, 100, table).algo == nst_algo_nvls_tree);
    // A NULL logger (NCCL always passes one, but a plugin must not depend on it).
    void* context = nullptr;
    REQUIRE(plugin.tuner()->init(&context, 1, 2, 1, nullptr, nullptr, nullptr) == nst_success);
    int channels = 0;
    CostTable copy = table;
    REQUIRE(plugin.tuner()->get_coll_info(context, nst_func_all_reduce, 100, 1,
                                          reinterpret_cast<float**>(copy.data()), nst_algo_count,
                                          nst_proto_count, 0, &channels) == nst_success);
    CHECK(cheapest(copy, channels).algo == nst_algo_nvls_tree);
    REQUIRE(plugin.tuner()->finalize(context) == nst_success);
    // A narrower table (fewer algorithm rows than the rule's index): the rule cannot apply.
    float narrow[5][nst_proto_count];
    for (auto& row : narrow)
        for (float& cell : row) cell = 10.0f;
    channels = 0;
    REQUIRE(plugin.tuner()->get_coll_info(nullptr, nst_func_all_reduce, 100, 1, nullptr, 5, 3, 0,
                                          &channels) == nst_success);
    void* narrow_context = nullptr;
    ::setenv("NCCLSWEEP_TUNER_PROFILE", (dir.path() / "profile.txt").c_str(), 1);
    REQUIRE(plugin.tuner()->init(&narrow_context, 1, 2, 1, tuner_logger, nullptr, nullptr) == nst_success);
    REQUIRE(plugin.tuner()->get_coll_info(narrow_context, nst_func_all_reduce, 100, 1,
                                          reinterpret_cast<float**>(narrow), 5, nst_proto_count, 0,
                                          &channels) == nst_success);
    for (auto& row : narrow)
        for (float cell : row) CHECK(cell == 10.0f);
    CHECK(channels == 0);
    CHECK(logged_with("asks for NVLS_TREE/SIMPLE, which NCCL does not offer here").size() == 1);
    REQUIRE(plugin.tuner()->finalize(narrow_context) == nst_success);
}

TEST_CASE("tuner plugin: 1000 mutated profiles each load whole or are rejected whole and never crash") {
    TempDir dir;
    const std::string valid = profile(
        "allreduce 57344 57344 8 1 tree ll 0\n"
        "allgather 1310720 1310720 8 1 ring simple 4\n");
    TunerPlugin plugin;
    REQUIRE(plugin.tuner() != nullptr);
    std::mt19937 random(20261201);
    int loaded = 0, rejected = 0;
    for (int round = 0; round < 1000; ++round) {
        std::string text = valid;
        const int edits = 1 + static_cast<int>(random() % 4);
        for (int e = 0; e < edits && !text.empty(); ++e) {
            const std::size_t at = random() % text.size();
            switch (random() % 3) {
                case 0:
                    text[at] = static_cast<char>(random() % 256);
                    break;
                case 1:
                    text.insert(at, 1, " \n#0-9a,\t\r:"[random() % 11]);
                    break;
                default:
                    text.erase(at, 1 + random() % 8);
                    break;
            }
        }
        auto path = use_profile(dir, text);
        TunerComm comm(plugin.tuner(), 8, 1);
        REQUIRE(comm.init_result() == nst_success);
        const bool ok = logged_with(" loaded: ").size() == 1;
        const bool refused = logged_with(" rejected: ").size() == 1;
        INFO(text);
        REQUIRE(ok != refused);
        (ok ? loaded : rejected) += 1;
        for (auto [func, bytes] : {std::pair{nst_func_all_reduce, std::size_t{57344}},
                                   std::pair{nst_func_all_gather, std::size_t{1310720}}}) {
            CostTable table = pcie_table();
            int channels = 0;
            REQUIRE(comm.call(func, bytes, table, channels) == nst_success);
            if (refused) {
                CHECK(table == pcie_table());
                CHECK(channels == 0);
            }
        }
    }
    // Both outcomes occur, so the mutations reach the parser's checks and its acceptance.
    INFO(loaded << " loaded, " << rejected << " rejected");
    CHECK(loaded > 50);
    CHECK(rejected > 50);
}
