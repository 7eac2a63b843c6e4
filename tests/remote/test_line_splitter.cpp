#include "remote/line_splitter.hpp"

#include "tests/support/catch.hpp"

using ncclsweep::OutputLine;
using ncclsweep::Stream;
using ncclsweep::remote::LineQueue;
using ncclsweep::remote::LineSplitter;

namespace {
void feed(LineSplitter& s, const std::string& text, LineQueue& out) {
    s.feed(text.data(), text.size(), out);
}
}  // namespace

TEST_CASE("line splitter joins chunks and splits on newline", "[remote][lines]") {
    LineSplitter s(Stream::err, 100);
    LineQueue out;
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
    LineQueue out;
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
    LineQueue out;
    const std::string bytes("\x00\xff\x1b[31m\r\x80", 8);
    feed(s, bytes + "\n", out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].text == bytes);
}

TEST_CASE("line splitter stamps the lines of one chunk with one read time", "[remote][lines]") {
    LineSplitter s(Stream::out, 64);
    LineQueue out;
    feed(s, "a\nb\nc", out);
    REQUIRE(out.size() == 2);
    CHECK(out[0].when == out[1].when);
    feed(s, "\nd\n", out);
    REQUIRE(out.size() == 4);
    CHECK(out[2].when == out[3].when);
    CHECK(out[2].when >= out[1].when);
}

TEST_CASE("line queue hands lines out oldest first across growth and wrap-around", "[remote][lines]") {
    LineQueue q;
    OutputLine line;
    int pushed = 0, popped = 0;
    for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < 7 + round % 5; ++i) q.push_back().text = std::to_string(pushed++);
        for (int i = 0; i < 5 + round % 3 && !q.empty(); ++i) {
            q.pop_front_into(line);
            REQUIRE(line.text == std::to_string(popped++));
        }
    }
    while (!q.empty()) {
        q.pop_front_into(line);
        REQUIRE(line.text == std::to_string(popped++));
    }
    CHECK(popped == pushed);
    q.push_back().text = "a";
    q.push_back().text = "b";
    q.push_back().text = "c";
    q.erase(1);
    REQUIRE(q.size() == 2);
    CHECK(q[0].text == "a");
    CHECK(q[1].text == "c");
    q.clear();
    CHECK(q.empty());
}

TEST_CASE("line queue reuses text buffers instead of allocating one per line", "[remote][lines]") {
    LineQueue q;
    OutputLine line;
    line.text.reserve(300);
    const char* caller_buffer = line.text.data();
    q.push_back().text.assign(200, 'x');
    q.pop_front_into(line);  // the caller's buffer now waits in the queue for a later line
    OutputLine& next = q.push_back();
    CHECK(next.text.empty());
    CHECK(next.text.data() == caller_buffer);
    CHECK(next.text.capacity() >= 300);
}

TEST_CASE("line queue keeps little once emptied, whatever went through it", "[remote][lines]") {
    LineQueue q;
    OutputLine line;
    for (int i = 0; i < 20000; ++i) q.push_back().text.assign(100, 'y');  // a flood of short lines
    CHECK(q.slots() >= 20000);
    while (!q.empty()) q.pop_front_into(line);
    CHECK(q.slots() <= 1024);
    for (int i = 0; i < 50; ++i) {  // 1 MB lines through it
        q.push_back().text.assign(1 << 20, 'z');
        q.pop_front_into(line);
    }
    CHECK(q.held_bytes() <= 1024 * 4096);
    CHECK(q.held_bytes() < 2 * (1 << 20));
}
