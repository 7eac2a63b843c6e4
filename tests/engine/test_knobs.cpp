#include <cstdlib>
#include <string>
#include <utility>

#include "engine/knobs.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify;

namespace {
/// Sets (or, with nullptr, unsets) one variable for a scope, then puts it back as it was.
class KnobEnv {
public:
    KnobEnv(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old, m_had = true;
        if (value == nullptr)
            ::unsetenv(name);
        else
            ::setenv(name, value, 1);
    }
    ~KnobEnv() {
        if (m_had)
            ::setenv(m_name, m_old.c_str(), 1);
        else
            ::unsetenv(m_name);
    }
    KnobEnv(const KnobEnv&) = delete;
    KnobEnv& operator=(const KnobEnv&) = delete;

private:
    const char* m_name;
    std::string m_old;
    bool m_had = false;
};
constexpr const char* k_knob = "TPVERIFY_TEST_KNOB";
}  // namespace

TEST_CASE("knobs: unset and empty mean the default, for every reader") {
    for (const char* v : {static_cast<const char*>(nullptr), ""}) {
        KnobEnv e(k_knob, v);
        CHECK(env_or(k_knob, "fallback") == "fallback");
        CHECK(env_int(k_knob, 24) == 24);
        CHECK(env_int(k_knob, -3, -5) == -3);
        CHECK(env_enum(k_knob, {std::pair{"", 1}, std::pair{"a", 2}}, 7) == 7);
        CHECK(shape_int(env_or(k_knob), 7168, 2048, 3) == 3);
        CHECK_FALSE(env_is(k_knob, "0"));
    }
    KnobEnv e(k_knob, "");
    CHECK(env_is(k_knob, ""));  // set, to nothing: only an exact match says so
}

TEST_CASE("knobs: values are read as written, numbers clamped at their minimum") {
    {
        KnobEnv e(k_knob, "48");
        CHECK(env_int(k_knob, 0) == 48);
        CHECK(env_or(k_knob) == "48");
        CHECK(env_is(k_knob, "48"));
        CHECK_FALSE(env_is(k_knob, "4"));
    }
    {
        KnobEnv e(k_knob, "-7");
        CHECK(env_int(k_knob, 5) == 0);
        CHECK(env_int(k_knob, 5, -10) == -7);
    }
    {
        KnobEnv e(k_knob, "abc");
        CHECK(env_int(k_knob, 5) == 0);  // as atoi: not a number reads 0, then the minimum
        CHECK(env_int(k_knob, 5, 1) == 1);
    }
    {
        KnobEnv e(k_knob, "redux");
        CHECK(env_enum(k_knob, {std::pair{"split", 1}, std::pair{"redux", 2}, std::pair{"shfl", 3}}, 0) == 2);
        CHECK(env_enum(k_knob, {std::pair{"split", 1}, std::pair{"shfl", 3}}, 0) == 0);
        CHECK(env_enum(k_knob, {std::pair{"redu", 1}, std::pair{"reduxx", 2}}, 0) == 0);
    }
}

TEST_CASE("knobs: a per-shape number names its shape as NxK=V, a bare number every shape") {
    {
        KnobEnv e(k_knob, "4");
        CHECK(shape_int(env_or(k_knob), 7168, 2048, 2) == 4);
        CHECK(shape_int(env_or(k_knob), 4096, 7168, 2) == 4);
    }
    {
        KnobEnv e(k_knob, "7168x2048=4,4096x7168=1");
        CHECK(shape_int(env_or(k_knob), 7168, 2048, 2) == 4);
        CHECK(shape_int(env_or(k_knob), 4096, 7168, 3) == 1);
        CHECK(shape_int(env_or(k_knob), 2048, 7168, 3) == 3);  // not named: the fallback
        CHECK(shape_int(env_or(k_knob), 716, 2048, 3) == 3);   // a prefix of a named n is another shape
        CHECK(shape_int(env_or(k_knob), 7168, 204, 3) == 3);   // so is a prefix of a named k
    }
    {
        KnobEnv e(k_knob, "junk,7168x2048=,7168x2048=0,7168x2048=5");
        CHECK(shape_int(env_or(k_knob), 7168, 2048, 2, 1) == 1);  // the first naming it wins, clamped
        CHECK(shape_int(env_or(k_knob), 7168, 2048, 2) == 0);
    }
    CHECK(shape_int("", 7168, 2048, 6) == 6);
    CHECK(shape_int("7168x2048=4", 7168, 2048, 6) == 4);
    CHECK(shape_int("4096x7168=4", 7168, 2048, 6) == 6);
}

TEST_CASE("knobs: a per-shape word names its shape as NxK=V, a bare word every shape") {
    CHECK(shape_text("", 7168, 2048, "default") == "default");
    CHECK(shape_text("u8", 7168, 2048, "") == "u8");
    CHECK(shape_text("u8", 4096, 7168, "") == "u8");
    const std::string list = "4096x7168=sk,7168x2048=u8,7168x2048=u4";
    CHECK(shape_text(list, 7168, 2048, "") == "u8");  // the first naming it wins
    CHECK(shape_text(list, 4096, 7168, "") == "sk");
    CHECK(shape_text(list, 2048, 7168, "none") == "none");  // not named: the fallback
    CHECK(shape_text(list, 716, 2048, "none") == "none");   // a prefix of a named n is another shape
    CHECK(shape_text("7168x2048=,7168x2048=bulk8", 7168, 2048, "") == "bulk8");  // an empty value skipped
    KnobEnv e(k_knob, "7168x2048=u8");
    CHECK(shape_text(env_or(k_knob), 7168, 2048, "") == "u8");
    CHECK(shape_text(env_or(k_knob), 4096, 7168, "") == "");
}

TEST_CASE("knobs: a name list sets one bit a known name and reports the first unknown one") {
    std::string unknown;
    CHECK(name_set("", {"a", "bb", "c"}, unknown) == 0);
    CHECK(unknown.empty());
    CHECK(name_set("c,a", {"a", "bb", "c"}, unknown) == 0b101);
    CHECK(unknown.empty());
    CHECK(name_set(",bb,,bb,", {"a", "bb", "c"}, unknown) == 0b010);  // empty items skipped, repeats once
    CHECK(name_set("b,a,cc,x", {"a", "bb", "c"}, unknown) == 0b001);  // a prefix or extension is not the name
    CHECK(unknown == "b");
    unknown = "stale";
    CHECK(name_set("a", {"a"}, unknown) == 1);
    CHECK(unknown.empty());  // cleared on every call
}
