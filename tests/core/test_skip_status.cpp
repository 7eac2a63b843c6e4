// How a skipped test ends (tests/support/skip.hpp, catch_main.cpp): the exit status CTest reads.
// The two hidden cases are run by tests/support/skips_are_skips.sh as processes of their own;
// they are not CTest tests themselves (one skips, the other fails on purpose).
#include "tests/support/catch.hpp"
#include "tests/support/skip.hpp"

using namespace ncclsweep::test;

TEST_CASE("skip status: a failure wins over a skip, a skip alone exits 77, else 0") {
    // Catch's count of failed tests, as main hands it over.
    const bool before = test_skipped();
    test_skipped() = false;
    CHECK(exit_status(0) == 0);
    CHECK(exit_status(3) == 3);
    test_skipped() = true;
    CHECK(exit_status(0) == k_skip_exit_status);
    CHECK(exit_status(1) == 1);
    // 77 failed tests must not read as "skipped".
    CHECK(exit_status(k_skip_exit_status) == 1);
    test_skipped() = before;
}

TEST_CASE("skip status: a test that only skips", "[.][skip-status]") {
    skip_test("demo", "this machine lacks what the demo needs");
}

TEST_CASE("skip status: a test that skips and then fails", "[.][skip-status]") {
    skip_test("demo", "this machine lacks what the demo needs");
    CHECK(1 + 1 == 3);
}
