// NCCL TUNING/ENV line parsing and the deduplicated effective configuration.
#include <string>

#include "core/effective_nccl.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;

TEST_CASE("a TUNING line with prefix, names and channel range is parsed") {
    auto choice = parse_tuning_line("node1:41001:41001 [0] NCCL INFO AllReduce: 14336 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}");
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

    auto threads = parse_tuning_line("host:1:2 [3] NCCL INFO Broadcast: 4096 Bytes -> Algo 0 proto 1 nchannels 2 nthreads 256");
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
        const auto prefix = "node1:4100" + std::to_string(rank) + ":4100" + std::to_string(rank) + " [" + std::to_string(rank) + "] NCCL INFO ";
        CHECK(a.add_line(prefix + "AllGather: 1310720 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}"));
        CHECK(a.add_line(prefix + "AllReduce: 57344 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}"));
        CHECK(a.add_line(prefix + "AllReduce: 14336 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}"));
        CHECK(a.add_line(prefix + "NCCL_PROTO set by environment to LL"));
        CHECK_FALSE(a.add_line(prefix + "Connected all rings"));
    }
    CHECK(a.choices().size() == 3);
    CHECK(a.env().size() == 1);
    const std::string expected =
        "AllGather 1310720B: RING/SIMPLE ch0..1; AllReduce 14336B: RING/LL ch0..0; AllReduce 57344B: RING/LL ch0..0; "
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
        nccl.add_line("AllReduce: " + std::to_string(1000 + i) + " Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}");
    CHECK(nccl.choices().size() == EffectiveNccl::k_max_entries);
    CHECK(nccl.dropped() == extra);
    CHECK(nccl.summary().find("(+10 more not kept)") != std::string::npos);
    CHECK(nccl.summary().size() < 9000);
}
