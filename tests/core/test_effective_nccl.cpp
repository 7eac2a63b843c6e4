// NCCL TUNING/ENV line parsing and the deduplicated effective configuration.
#include <fstream>
#include <string>

#include "core/nccl/effective_nccl.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::nccl;

TEST_CASE("a TUNING line with prefix, names and channel range is parsed") {
    auto choice = parse_tuning_line(
        "node1:41001:41001 [0] NCCL INFO AllReduce: 14336 Bytes -> Algo RING proto LL "
        "channel{Lo..Hi}={0..0}");
    REQUIRE(choice);
    CHECK(choice->collective == "AllReduce");
    CHECK(choice->bytes == 14336);
    CHECK(choice->algo == "RING");
    CHECK(choice->proto == "LL");
    CHECK(choice->channel_lo == 0);
    CHECK(choice->channel_hi == 0);
    CHECK(choice->to_string() == "AllReduce 14336B: RING/LL ch0..0");
}

TEST_CASE("older TUNING formats: numeric ids, time, nchannels/nthreads, no prefix") {
    auto numeric = parse_tuning_line("AllGather: 1310720 Bytes -> Algo 1 proto 2 time 41.250000");
    REQUIRE(numeric);
    CHECK(numeric->collective == "AllGather");
    CHECK(numeric->algo == "RING");
    CHECK(numeric->proto == "SIMPLE");
    CHECK(numeric->channel_lo == -1);

    auto threads = parse_tuning_line(
        "host:1:2 [3] NCCL INFO Broadcast: 4096 Bytes -> Algo 0 proto 1 nchannels 2 nthreads 256");
    REQUIRE(threads);
    CHECK(threads->algo == "TREE");
    CHECK(threads->proto == "LL128");
    CHECK(threads->nchannels == 2);
    CHECK(threads->nthreads == 256);
    CHECK(threads->to_string() == "Broadcast 4096B: TREE/LL128 nch2 t256");

    auto bare = parse_tuning_line("57344 Bytes -> Algo tree proto ll time 12.0");
    REQUIRE(bare);
    CHECK(bare->collective == "?");
    CHECK(bare->algo == "TREE");
    CHECK(bare->proto == "LL");
}

TEST_CASE("lines that are not TUNING lines are rejected") {
    CHECK_FALSE(parse_tuning_line("node1:1:1 [0] NCCL INFO Channel 00/02 : 0 1 2 3 4 5 6 7"));
    CHECK_FALSE(parse_tuning_line("AllReduce: lots Bytes -> Algo RING proto LL"));
    CHECK_FALSE(parse_tuning_line("AllReduce: 14336 Bytes -> Algo RING"));
    CHECK_FALSE(parse_env_line("node1:1:1 [0] NCCL INFO cudaDriverVersion 12080"));
    CHECK_FALSE(parse_env_line("FOO set by environment to 1"));
}

TEST_CASE("ENV lines: string and numeric values") {
    auto algo = parse_env_line("node1:1:1 [0] NCCL INFO NCCL_ALGO set by environment to allreduce:tree");
    REQUIRE(algo);
    CHECK(algo->name == "NCCL_ALGO");
    CHECK(algo->value == "allreduce:tree");
    auto channels = parse_env_line("node1:1:1 [0] NCCL INFO NCCL_MAX_NCHANNELS set by environment to 2.");
    REQUIRE(channels);
    CHECK(channels->value == "2");
}

TEST_CASE("8 ranks printing the same lines give one sorted, canonical summary") {
    EffectiveNccl a;
    for (int rank = 7; rank >= 0; --rank) {
        const auto prefix = "node1:4100" + std::to_string(rank) + ":4100" + std::to_string(rank) + " [" +
                            std::to_string(rank) + "] NCCL INFO ";
        CHECK(
            a.add_line(prefix + "AllGather: 1310720 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}"));
        CHECK(a.add_line(prefix + "AllReduce: 57344 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}"));
        CHECK(a.add_line(prefix + "AllReduce: 14336 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}"));
        CHECK(a.add_line(prefix + "NCCL_PROTO set by environment to LL"));
        CHECK_FALSE(a.add_line(prefix + "Connected all rings"));
    }
    CHECK(a.choices().size() == 3);
    CHECK(a.env().size() == 1);
    const std::string expected =
        "AllGather 1310720B: RING/SIMPLE ch0..1; AllReduce 14336B: RING/LL ch0..0; AllReduce 57344B: RING/LL "
        "ch0..0; "
        "env: NCCL_PROTO=LL";
    CHECK(a.summary() == expected);

    // Same effective configuration in another order (another run, NCCL ignored a knob) -> same text.
    EffectiveNccl b;
    b.add_line("NCCL INFO NCCL_PROTO set by environment to LL");
    b.add_line("AllReduce: 14336 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}");
    b.add_line("AllReduce: 57344 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}");
    b.add_line("AllGather: 1310720 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}");
    CHECK(b.summary() == expected);
    CHECK(EffectiveNccl().summary().empty());
    CHECK(EffectiveNccl().empty());
}

TEST_CASE("the effective configuration stays bounded") {
    EffectiveNccl nccl;
    const std::size_t extra = 10;
    for (std::size_t i = 0; i < EffectiveNccl::k_max_entries + extra; ++i)
        nccl.add_line("AllReduce: " + std::to_string(1000 + i) +
                      " Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}");
    CHECK(nccl.choices().size() == EffectiveNccl::k_max_entries);
    CHECK(nccl.dropped() == extra);
    CHECK(nccl.summary().find("(+10 more not kept)") != std::string::npos);
    CHECK(nccl.summary().size() < 9000);
}

TEST_CASE("our tuner plugin's lines are recognised and reduced to path-free text") {
    const std::string prefix = "gpu1:7:7 [0] NCCL INFO ";
    auto applied = parse_tuner_line(prefix +
                                    "ncclsweep tuner: AllReduce 57344 bytes -> algo TREE proto LL channels 0 "
                                    "(/srv/my profiles/p.txt:4)");
    REQUIRE(applied);
    CHECK(applied->kind == TunerEvent::Kind::applied);
    CHECK(applied->text == "AllReduce 57344B -> TREE/LL ch0");

    auto ignored =
        parse_tuner_line(prefix +
                         "ncclsweep tuner: AllGather 1310720 bytes: /p.txt:5 asks for PAT/SIMPLE, which NCCL "
                         "does not offer here (cost -1); left to NCCL (said once per rule)");
    REQUIRE(ignored);
    CHECK(ignored->kind == TunerEvent::Kind::ignored);
    CHECK(ignored->text == "AllGather 1310720B: PAT/SIMPLE not offered by NCCL");

    auto loaded = parse_tuner_line(
        prefix + "ncclsweep tuner: profile /a b/p.txt loaded: 2 rules, 1 for nRanks 8 nNodes 1");
    REQUIRE(loaded);
    CHECK(loaded->kind == TunerEvent::Kind::loaded);
    CHECK(loaded->text == "profile loaded: 2 rules, 1 for nRanks 8 nNodes 1");

    auto rejected = parse_tuner_line(
        "gpu1:7:7 [0] NCCL WARN ncclsweep tuner: profile /p.txt rejected: line 4: unknown algorithm 'rnig' "
        "(accepted: "
        "tree ring); every collective is left to NCCL (re-export it with 'ncclsweep export --format "
        "tuner-profile')");
    REQUIRE(rejected);
    CHECK(rejected->kind == TunerEvent::Kind::rejected);
    CHECK(rejected->text == "profile rejected: line 4: unknown algorithm 'rnig' (accepted: tree ring)");

    auto unset =
        parse_tuner_line("NCCL WARN ncclsweep tuner: NCCLSWEEP_TUNER_PROFILE is not set, so every ...");
    REQUIRE(unset);
    CHECK(unset->text == "profile not set");

    CHECK_FALSE(parse_tuner_line(prefix + "TUNER/Plugin: Using ncclsweep (v5)"));
    CHECK_FALSE(parse_tuner_line(prefix + "ncclsweep tuner: AllReduce many bytes -> algo TREE"));
    CHECK_FALSE(parse_tuner_line(prefix + "ncclsweep tuner: AllReduce 5 bytes -> algo TREE proto LL"));
    CHECK_FALSE(parse_tuner_line(prefix + "ncclsweep tuner: something else"));
}

TEST_CASE("tuner lines join the summary after NCCL's own choice and every rank counts once") {
    EffectiveNccl nccl;
    for (int rank = 0; rank < 8; ++rank) {
        const auto prefix =
            "gpu1:" + std::to_string(100 + rank) + ":1 [" + std::to_string(rank) + "] NCCL INFO ";
        CHECK(nccl.add_line(prefix + "ncclsweep tuner: profile /tmp/r" + std::to_string(rank) +
                            "/p.txt loaded: 1 rules, 1 for nRanks 8 nNodes 1"));
        CHECK(nccl.add_line(
            prefix + "ncclsweep tuner: AllReduce 57344 bytes -> algo TREE proto LL channels 0 (/tmp/r" +
            std::to_string(rank) + "/p.txt:4)"));
        CHECK(nccl.add_line(prefix + "AllReduce: 57344 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0}"));
    }
    CHECK(nccl.tuner().size() == 2);
    CHECK(nccl.summary() ==
          "AllReduce 57344B: TREE/LL ch0..0; tuner: profile loaded: 1 rules, 1 for nRanks 8 nNodes 1, "
          "AllReduce 57344B -> TREE/LL ch0");
    CHECK_FALSE(nccl.empty());
}

TEST_CASE("recorded NCCL 2.28.3 logs with the plugin read as loaded or rejected") {
    // tests/fixtures/tuner/README.md: one H200, tpverify --tp 1, NCCL_TUNER_PLUGIN set.
    auto read = [](const char* name) {
        EffectiveNccl nccl;
        std::ifstream in(test::source_path(std::string("tests/fixtures/tuner/") + name));
        REQUIRE(in);
        for (std::string line; std::getline(in, line);) nccl.add_line(line);
        return nccl;
    };
    auto good = read("h200_nccl2.28.3_tp1_plugin.log");
    CHECK(good.summary() ==
          "env: NCCL_TUNER_PLUGIN=/work/main/.device/tuner/build-engine/tuner/libnccl-tuner-ncclsweep.so; "
          "tuner: profile loaded: 2 rules, 2 for nRanks 1 nNodes 1");
    auto bad = read("h200_nccl2.28.3_tp1_bad_profile.log");
    REQUIRE(bad.tuner().size() == 1);
    CHECK(bad.tuner()[0].kind == TunerEvent::Kind::rejected);
    CHECK(bad.tuner()[0].text.rfind("profile rejected: line 2: unknown algorithm 'rnig' (accepted: tree ring",
                                    0) == 0);
}
