#include "remote/target_url.hpp"

#include "remote/shell_words.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>

using namespace ncclsweep;
using remote::parse_target_url;
using remote::TargetUrl;

TEST_CASE("target url: local and ssh forms", "[remote][url]") {
    auto local = parse_target_url("local");
    REQUIRE(local.ok());
    CHECK(local->kind == TargetUrl::Kind::local);
    auto full = parse_target_url("ssh://gpu@node-7.example.com:2222");
    REQUIRE(full.ok());
    CHECK(full->kind == TargetUrl::Kind::ssh);
    CHECK(full->user == "gpu");
    CHECK(full->host == "node-7.example.com");
    CHECK(full->port == 2222);
    CHECK(full->to_string() == "ssh://gpu@node-7.example.com:2222");
    auto bare = parse_target_url("ssh://10.0.0.5");
    REQUIRE(bare.ok());
    CHECK(bare->user.empty());
    CHECK(bare->port == 22);
    auto v6 = parse_target_url("ssh://me@[::1]:2200");
    REQUIRE(v6.ok());
    CHECK(v6->host == "::1");
    CHECK(v6->port == 2200);
    CHECK(v6->to_string() == "ssh://me@[::1]:2200");
}

TEST_CASE("target url: bad forms are bad_input naming the url", "[remote][url]") {
    for (const std::string url :
         {"ftp://host", "ssh://", "ssh://u@host:0", "ssh://u@host:70000", "ssh://u@host:22x", "ssh://u@ho st",
          "ssh://u@host/path", "ssh://-oProxyCommand=x@host", "ssh://u@[::1",
          "ssh://u@host:", "ssh://u@h;rm -rf"}) {
        auto parsed = parse_target_url(url);
        INFO(url);
        REQUIRE_FALSE(parsed.ok());
        CHECK(parsed.error().kind == ErrorKind::bad_input);
        CHECK(parsed.error().message.find(url) != std::string::npos);
    }
}

TEST_CASE("a command's script quotes every word and value", "[remote][quote]") {
    CHECK(remote::shell_quote("it's") == "'it'\\''s'");
    CHECK(remote::shell_quote("") == "''");
    Command command;
    command.argv = {"prog", "a b"};
    command.env = {{"A", "$(x)"}};
    command.pythonpath_prepend = "/w/site";
    auto script = remote::command_script(command, "/w d", remote::ExecLast::yes, "ssh");
    REQUIRE(script.ok());
    CHECK(*script ==
          "cd '/w d' || exit 126; PYTHONPATH='/w/site'\"${PYTHONPATH:+:$PYTHONPATH}\"; export PYTHONPATH; "
          "exec env -- 'A=$(x)' 'prog' 'a b'");
    command.env = {{"BAD NAME", "x"}};
    auto bad_name = remote::command_script(command, "", remote::ExecLast::yes, "ssh");
    REQUIRE_FALSE(bad_name.ok());
    CHECK(bad_name.error().message.rfind("ssh: ", 0) == 0);
    command.env = {{"A", std::string("x\0y", 3)}};
    CHECK_FALSE(remote::command_script(command, "", remote::ExecLast::yes, "ssh").ok());
    command.env.clear();
    command.argv.clear();
    CHECK_FALSE(remote::command_script(command, "", remote::ExecLast::yes, "ssh").ok());
}

TEST_CASE("a program whose path holds '=' is run, not taken by env for a variable", "[remote][quote]") {
    // env reads NAME=VALUE words up to the command, after `--` too: /d/a=b/prog would become a
    // variable and 'x' would run. The script is run here by /bin/sh as the agent runs it.
    test::TempDir dir;
    std::filesystem::create_directory(dir.path() / "a=b");
    const auto prog = dir.path() / "a=b" / "prog";
    dir.write("a=b/prog", "#!/bin/sh\necho \"ran $0 [$1] [$2] V=$V\"\n");
    std::filesystem::permissions(prog, std::filesystem::perms::owner_all);
    Command command;
    command.argv = {prog.string(), "x y", "$HOME"};
    command.env = {{"V", "it's"}};
    auto script = remote::command_script(command, dir.path().string(), remote::ExecLast::yes, "ssh");
    REQUIRE(script.ok());
    const auto ran = test::run_command({"/bin/sh", "-c", *script});
    CHECK(ran.exit_code == 0);
    CHECK(ran.out == "ran " + prog.string() + " [x y] [$HOME] V=it's\n");
    // An ordinary program keeps the plain form.
    command.argv = {"/bin/echo", "a=b"};
    auto plain = remote::command_script(command, "", remote::ExecLast::yes, "ssh");
    REQUIRE(plain.ok());
    CHECK(*plain == "exec env -- 'V=it'\\''s' '/bin/echo' 'a=b'");
    CHECK(test::run_command({"/bin/sh", "-c", *plain}).out == "a=b\n");
}
