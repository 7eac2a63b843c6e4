#include "engine/report.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify;

TEST_CASE("report: json_quote escapes quotes, backslashes and control characters") {
    CHECK(json_quote("plain") == "\"plain\"");
    CHECK(json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
    CHECK(json_quote("l1\nl2\tx\r") == "\"l1\\nl2\\tx\\r\"");
    CHECK(json_quote(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
    CHECK(json_quote(std::string("nul\0x", 5)) == "\"nul\\u0000x\"");
    CHECK(json_quote("µs → ok") == "\"µs → ok\"");  // UTF-8 passes through
}

TEST_CASE("report: JsonLine keeps order and types") {
    JsonLine j;
    j.add("s", "x").add("i", 57344).add("d", 1.5).add("b", true).add("n", std::nan("")).add_raw("r", "[1,2]");
    CHECK(j.str() == R"({"s":"x","i":57344,"d":1.5,"b":true,"n":null,"r":[1,2]})");
    CHECK(JsonLine().str() == "{}");
}

TEST_CASE("report: result fields follow the contract") {
    RunResult r;
    r.verify.p50_us = 100;
    r.verify.samples = 3;
    r.tok_s = 42;
    const std::string s = result_fields(r).str();
    for (const char* key : {"\"tok_s\":42", "\"verify_us_p50\":100", "\"verify_us_p10\"", "\"verify_us_p90\"",
                            "\"baseline_tok_s\"", "\"init_s\"", "\"capture_s\"", "\"collective_us\"",
                            "\"samples\":3", "\"check_wrong\":null"})
        CHECK(s.find(key) != std::string::npos);
    r.check_wrong = 0;
    CHECK(result_fields(r).str().find("\"check_wrong\":0") != std::string::npos);
}
