// The echo of `ncclsweep watch` (core/watch/echo_buffer.hpp): one write per chunk read, at
// 64 KiB at most, and no line held past 100 ms — driven by an injected clock (the lines' read
// times and tick()'s "now"), never by wall time.
#include "core/watch/echo_buffer.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace std::chrono_literals;

namespace {

using TimePoint = EchoBuffer::TimePoint;

const TimePoint k_t0 = TimePoint(std::chrono::hours(1000));

OutputLine read_at(const std::string& text, std::chrono::microseconds after_t0) {
    OutputLine line;
    line.text = text;
    line.when = k_t0 + after_t0;
    return line;
}

/// An echo whose writes are recorded.
struct Recorded {
    std::vector<std::string> writes;
    EchoBuffer echo{[this](std::string_view bytes) { writes.emplace_back(bytes); }};
};

}  // namespace

TEST_CASE("echo: the lines of one read are written together, when the next read begins") {
    Recorded r;
    r.echo.add(read_at("one", 0us));
    r.echo.add(read_at("two", 0us));
    r.echo.add(read_at("three", 0us));
    CHECK(r.writes.empty());  // gathered, not one system call per line
    CHECK(r.echo.buffered() == 14);
    r.echo.add(read_at("four", 5000us));  // a later read: the first one is whole
    REQUIRE(r.writes.size() == 1);
    CHECK(r.writes[0] == "one\ntwo\nthree\n");
    r.echo.flush();
    REQUIRE(r.writes.size() == 2);
    CHECK(r.writes[1] == "four\n");
    CHECK(r.echo.writes() == 2);
    r.echo.flush();  // nothing gathered: no empty write
    CHECK(r.writes.size() == 2);
}

TEST_CASE("echo: no line waits 100 ms, by the injected clock") {
    Recorded r;
    r.echo.add(read_at("server ready", 0us));
    r.echo.tick(k_t0 + 99ms);
    CHECK(r.writes.empty());
    r.echo.tick(k_t0 + 100ms);
    REQUIRE(r.writes.size() == 1);
    CHECK(r.writes[0] == "server ready\n");
    // The delay counts from the oldest line gathered, not the newest.
    r.echo.add(read_at("a", 200ms));
    r.echo.add(read_at("b", 200ms));
    r.echo.tick(k_t0 + 250ms);
    CHECK(r.writes.size() == 1);
    r.echo.tick(k_t0 + 300ms);
    REQUIRE(r.writes.size() == 2);
    CHECK(r.writes[1] == "a\nb\n");
    r.echo.tick(k_t0 + 10s);  // nothing gathered: nothing written
    CHECK(r.writes.size() == 2);
}

TEST_CASE("echo: a flood of one read is written in pieces of at most 64 KiB plus a line") {
    Recorded r;
    const std::string line(1000, 'x');
    for (int i = 0; i < 200; ++i) r.echo.add(read_at(line, 0us));  // one 200 kB read
    r.echo.flush();
    std::size_t total = 0;
    for (const auto& write : r.writes) {
        CHECK(write.size() <= 64 * 1024 + 1001);
        total += write.size();
    }
    CHECK(total == 200 * 1001);
    CHECK(r.writes.size() == 4);  // 66 lines (the first past 64 KiB), 66, 66, then the last 2
    CHECK(r.echo.buffered() == 0);
}

TEST_CASE("echo: bytes pass through as they are, and what is gathered is written when the echo ends") {
    std::vector<std::string> writes;
    {
        EchoBuffer echo([&writes](std::string_view bytes) { writes.emplace_back(bytes); },
                        EchoOptions{16, 10ms});
        echo.add(read_at(std::string("nul\0byte \xff\xfe", 11), 0us));
        echo.add(read_at("", 0us));  // an empty line stays a line
        CHECK(echo.writes() == 0);
    }
    REQUIRE(writes.size() == 1);
    CHECK(writes[0] == std::string("nul\0byte \xff\xfe\n\n", 13));
}
