// core/text: the one UTF-8 decoder and the one "first line" every printer uses.
#include "core/text.hpp"

#include <string>

#include "tests/support/catch.hpp"

using namespace ncclsweep;

TEST_CASE(
    "text: utf8_sequence accepts valid sequences and rejects overlong forms and surrogates and cut "
    "sequences") {
    char32_t code = 0;
    CHECK(utf8_sequence("a", 0, &code) == 1);
    CHECK(code == U'a');
    CHECK(utf8_sequence("\xC3\xA9", 0, &code) == 2);  // é
    CHECK(code == 0xE9);
    CHECK(utf8_sequence("\xE2\x82\xAC", 0, &code) == 3);  // €
    CHECK(code == 0x20AC);
    CHECK(utf8_sequence("\xF0\x9F\x98\x80", 0, &code) == 4);  // 😀
    CHECK(code == 0x1F600);
    CHECK(utf8_sequence("\xC0\xAF", 0) == 0);          // overlong '/'
    CHECK(utf8_sequence("\xED\xA0\x80", 0) == 0);      // a UTF-16 surrogate
    CHECK(utf8_sequence("\xF4\x90\x80\x80", 0) == 0);  // past U+10FFFF
    CHECK(utf8_sequence("\xE2\x82", 0) == 0);          // cut short
    CHECK(utf8_sequence("\x80", 0) == 0);              // a lone continuation byte
    CHECK(utf8_sequence("a", 5) == 0);                 // past the end
}

TEST_CASE("text: invalid_utf8_at finds the first bad byte") {
    CHECK(invalid_utf8_at("plain \xE2\x82\xAC text") == std::string_view::npos);
    CHECK(invalid_utf8_at("ok\xFFrest") == 2);
    CHECK(invalid_utf8_at("\xE2\x82") == 0);
}

TEST_CASE("text: utf8_prefix never cuts a character in two") {
    const std::string euros = "\xE2\x82\xAC\xE2\x82\xAC";  // two 3-byte characters
    CHECK(utf8_prefix(euros, 6) == euros);
    CHECK(utf8_prefix(euros, 5) == "\xE2\x82\xAC");
    CHECK(utf8_prefix(euros, 3) == "\xE2\x82\xAC");
    CHECK(utf8_prefix(euros, 2).empty());
}

TEST_CASE("text: first_line takes the first non-blank line and flattens and cuts it") {
    CHECK(first_line("\n  \n   graph_capture while capturing: boom\nsecond", 100) ==
          "graph_capture while capturing: boom");
    CHECK(first_line("tab\there\x01x  ", 100) == "tab here x");
    CHECK(first_line("", 10).empty());
    CHECK(first_line("\n\n", 10).empty());
    CHECK(first_line("abcdefghij", 4) == "abcd...");
    // A cut inside a multi-byte character backs off to the character's start.
    CHECK(first_line("ab\xE2\x82\xAC"
                     "cd",
                     4) == "ab...");
}

TEST_CASE("text: closest_match suggests a near name ignoring case and nothing for a far one") {
    const std::vector<std::string> commands{"plan", "run", "watch", "results", "diff", "export", "report"};
    CHECK(closest_match("plna", commands) == std::optional<std::string>("plan"));
    CHECK(closest_match("REPROT", commands) == std::optional<std::string>("report"));
    CHECK(closest_match("resluts", commands) == std::optional<std::string>("results"));
    CHECK_FALSE(closest_match("calibrate-everything", commands).has_value());
    CHECK_FALSE(closest_match("x", std::vector<std::string>{}).has_value());
}

TEST_CASE("text: count_of says 1 experiment and 2 experiments") {
    CHECK(count_of(1, "experiment") == "1 experiment");
    CHECK(count_of(2, "experiment") == "2 experiments");
    CHECK(count_of(0, "range") == "0 ranges");
}
