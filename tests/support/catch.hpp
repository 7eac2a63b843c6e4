#pragma once
// Include this instead of Catch2 directly: Debian 12 ships Catch2 v2, newer systems v3.
#if NCCLSWEEP_CATCH3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
