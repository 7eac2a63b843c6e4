#include "remote/line_splitter.hpp"

#include "tests/support/catch.hpp"

using ncclsweep::OutputLine;
using ncclsweep::Stream;
using ncclsweep::remote::LineSplitter;

namespace {
void feed(LineSplitter& s, const std::string& text, std::deque<OutputLine>& out) {
    s.feed(text.data(), text.size(), out);
}
}  // namespace

TEST_CASE("line splitter joins chunks and splits on newline", "[remote][lines]") {
    LineSplitter s(Stream::err, 100);
    std::deque<OutputLine> out;
    feed(s, "ab", out);
    feed(s, "c\nd\n\nef", out);
    REQUIRE(out.size() == 3);
    CHECK(out[0].text == "abc");
    CHECK(out[0].stream == Stream::err);
    CHECK(out[1].text == "d");
    CHECK(out[2].text.empty());
    CHECK(s.pending() == 2);
    s.finish(out);
    REQUIRE(out.size() == 4);
    CHECK(out[3].text == "ef");
    CHECK_FALSE(out[3].truncated);
}

TEST_CASE("line splitter cuts a long line at the limit and drops its tail", "[remote][lines]") {
    LineSplitter s(Stream::out, 4);
    std::deque<OutputLine> out;
    feed(s, "abcd\n", out);  // exactly the limit: kept whole
    feed(s, "0123", out);
    feed(s, "456789", out);  // passes the limit: emitted at once, truncated
    REQUIRE(out.size() == 2);
    CHECK(out[0].text == "abcd");
    CHECK_FALSE(out[0].truncated);
    CHECK(out[1].text == "0123");
    CHECK(out[1].truncated);
    CHECK(s.pending() == 0);
    feed(s, std::string(1000, 'x'), out);  // still the dropped tail
    CHECK(s.pending() == 0);
    feed(s, "yy\nnext\n", out);
    REQUIRE(out.size() == 3);
    CHECK(out[2].text == "next");
}

TEST_CASE("line splitter passes binary bytes through", "[remote][lines]") {
    LineSplitter s(Stream::out, 64);
    std::deque<OutputLine> out;
    const std::string bytes("\x00\xff\x1b[31m\r\x80", 8);
    feed(s, bytes + "\n", out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].text == bytes);
}
