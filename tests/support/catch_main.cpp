// The main of every test executable (Catch2 v2 and v3): a test that called skip_test() and
// failed nothing exits 77, which CTest reports as skipped (SKIP_RETURN_CODE); any failure is a
// failure, whatever the test printed before it.
#if NCCLSWEEP_CATCH3
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include "tests/support/skip.hpp"

int main(int argc, char** argv) {
    const int failed = Catch::Session().run(argc, argv);
    return ncclsweep::test::exit_status(failed);
}
