// The stream-K INT4 kernel's split (engine/cuda/stream_k_split.hpp): the arithmetic by which the
// kernel finds its units, the owners of an item's pieces, their workspace slots and the experts a
// block stages. The kernel itself runs only on a GPU (tests/engine/gpu_tpverify.sh, --check); a
// mistake here would add a piece twice, drop one, or let two warps write one slot, so each rule is
// checked against a brute-force walk over every unit at the pass's shapes.
#include <map>
#include <set>
#include <vector>

#include "engine/cuda/stream_k_split.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify::cuda::sg;

namespace {

struct Shape {
    int count, n, k, rows;
    long long warps;
};

// The 1-token pass's launches (8 experts, one row: down 7168 x 2048, gate_up 4096 x 7168) at 3 and 2
// blocks of 8 warps an SM on 132 SMs, the --check's 4 experts, a 4-token launch of 31 experts at one
// block an SM, and small ones where items are shorter or longer than a warp's share, and more warps
// than units.
const std::vector<Shape> k_shapes = {
    {8, 7168, 2048, 1, 3168}, {8, 4096, 7168, 1, 3168},  {8, 7168, 2048, 1, 2112}, {4, 7168, 2048, 1, 3168},
    {4, 4096, 7168, 4, 3168}, {31, 4096, 7168, 4, 1056}, {3, 48, 192, 2, 5},       {2, 32, 640, 1, 7},
    {1, 16, 64, 1, 1000},     {5, 64, 128, 8, 24},
};

}  // namespace

TEST_CASE("stream-K split: every unit has one warp, no warp is empty, and ks_owner finds it") {
    for (const Shape& sh : k_shapes) {
        const KSplit s = ks_make(sh.count, sh.n, sh.k, sh.rows, sh.warps, 8);
        INFO("count " << sh.count << " n " << sh.n << " k " << sh.k << " warps " << sh.warps);
        REQUIRE(s.units == (long long)sh.count * (sh.n / 16) * (sh.k / 64));
        CHECK(s.warps == std::min<long long>(sh.warps, s.units));
        CHECK(ks_begin(s, 0) == 0);
        CHECK(ks_begin(s, s.warps) == s.units);
        CHECK(ks_begin(s, s.warps + 7) == s.units);  // the last block's idle warps
        for (long long w = 0; w < s.warps; ++w) {
            const long long b = ks_begin(s, w), e = ks_begin(s, w + 1);
            REQUIRE(e > b);
            // Shares differ by at most one unit.
            CHECK(e - b >= s.units / s.warps);
            CHECK(e - b <= s.units / s.warps + 1);
            CHECK(ks_owner(s, b) == w);
            CHECK(ks_owner(s, e - 1) == w);
        }
    }
}

TEST_CASE("stream-K split: an item's pieces are its owners, each with a slot no other piece uses") {
    for (const Shape& sh : k_shapes) {
        const KSplit s = ks_make(sh.count, sh.n, sh.k, sh.rows, sh.warps, 8);
        INFO("count " << sh.count << " n " << sh.n << " k " << sh.k << " warps " << sh.warps);
        // Walk every warp's units as the kernel does: an item ends at its last chunk or at the warp's
        // last unit; it is whole where the warp also holds its first chunk.
        std::map<long long, std::vector<long long>> pieces;  // item -> the warps writing a piece
        std::map<long long, int> wholes;                     // item -> times written whole
        std::map<long long, long long> covered;              // item -> units multiplied
        std::set<long long> slots;
        for (long long w = 0; w < s.warps; ++w) {
            const long long b = ks_begin(s, w), e = ks_begin(s, w + 1);
            long long item_start = b;
            for (long long u = b; u < e; ++u) {
                const long long item = u / s.chunks;
                const bool last_chunk = u % s.chunks == s.chunks - 1;
                if (!last_chunk && u + 1 < e) continue;
                covered[item] += u + 1 - item_start;
                if (item_start % s.chunks == 0 && last_chunk) {
                    ++wholes[item];
                } else {
                    pieces[item].push_back(w);
                    const long long slot = ks_piece_slot(s, w, item);
                    CHECK(slot / 2 == w);
                    CHECK(slots.insert(slot).second);  // no two pieces share a slot
                }
                item_start = u + 1;
            }
        }
        const long long items = s.units / s.chunks;
        for (long long item = 0; item < items; ++item) {
            CHECK(covered[item] == s.chunks);
            const long long first = ks_owner(s, item * s.chunks),
                            last = ks_owner(s, item * s.chunks + s.chunks - 1);
            if (first == last) {
                CHECK(wholes[item] == 1);
                CHECK(pieces.count(item) == 0);
            } else {
                // The kernel waits for last - first + 1 tickets and adds the owners' slots in order.
                CHECK(wholes.count(item) == 0);
                std::vector<long long> owners;
                for (long long p = first; p <= last; ++p) owners.push_back(p);
                CHECK(pieces[item] == owners);
            }
        }
        CHECK((long long)slots.size() <= 2 * s.warps);
        CHECK(ks_partial_floats(s) == (unsigned long long)(2 * s.warps) * 128);
    }
}

TEST_CASE("stream-K split: a block stages the x of exactly the experts its warps touch") {
    for (const Shape& sh : k_shapes) {
        const KSplit s = ks_make(sh.count, sh.n, sh.k, sh.rows, sh.warps, 8);
        INFO("count " << sh.count << " n " << sh.n << " k " << sh.k << " warps " << sh.warps);
        const long long per_expert = (long long)s.tiles * s.chunks;
        int most = 0;
        for (long long blk = 0; blk * 8 < s.warps; ++blk) {
            std::set<long long> experts;
            for (long long w = 8 * blk; w < std::min(8 * blk + 8, s.warps); ++w)
                for (long long u = ks_begin(s, w); u < ks_begin(s, w + 1); ++u)
                    experts.insert(u / per_expert);
            REQUIRE_FALSE(experts.empty());
            CHECK(ks_block_first_expert(s, blk, 8) == *experts.begin());
            CHECK(ks_block_experts(s, blk, 8) == int(*experts.rbegin() - *experts.begin() + 1));
            most = std::max(most, ks_block_experts(s, blk, 8));
        }
        CHECK(s.slots == most);
        CHECK(s.max_rows == sh.rows);
    }
    // The 1-token launches touch at most two experts a block: two rows of x in shared memory.
    CHECK(ks_make(8, 7168, 2048, 1, 3168, 8).slots == 2);
    CHECK(ks_make(8, 4096, 7168, 1, 3168, 8).slots == 2);
}
