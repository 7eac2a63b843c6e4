#pragma once
// A local user with a chosen login shell, for tests of what the user's login shell does to
// ncclsweep over the test sshd (tests/support/test_sshd.hpp). Creating a user needs root:
// elsewhere the test is reported skipped (requirement "root"), as other root-only tests are.
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/skip.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_sshd.hpp"

namespace ncclsweep::test {

struct TestUser {
    std::string name;
    std::string shell;
    std::filesystem::path home;
    bool available = false;

    /// Makes `name` a user whose login shell is `shell` (created once per machine, under a
    /// lock: tests run in parallel; its password field `*`, so sshd takes its key but nothing
    /// else) and writes `files` (path relative to its home, content) into its home, owned by
    /// it. Not available, and the test marked skipped, without root or without `shell`.
    TestUser(std::string user, std::string login_shell,
             const std::vector<std::pair<std::string, std::string>>& files = {})
        : name(std::move(user)), shell(std::move(login_shell)) {
        if (::getuid() != 0) {
            skip_test("root", "creating the test user " + name + " (login shell " + shell + ") needs root");
            return;
        }
        if (!std::filesystem::exists(shell)) {
            skip_test(std::filesystem::path(shell).filename().string(),
                      shell + " is not installed (scripts/install-deps.sh installs it)");
            return;
        }
        auto made =
            run_command({"flock", "/tmp/ncclsweep-test-users.lock", "/bin/sh", "-c",
                         "getent passwd \"$1\" >/dev/null || useradd --create-home --shell \"$2\" \"$1\" "
                         "&& usermod --shell \"$2\" --password '*' \"$1\"",
                         "sh", name, shell});
        INFO(made.err);
        REQUIRE(made.exit_code == 0);
        const passwd* pw = ::getpwnam(name.c_str());
        REQUIRE(pw != nullptr);
        home = pw->pw_dir;
        for (const auto& [path, content] : files) {
            const auto full = home / path;
            std::filesystem::create_directories(full.parent_path());
            std::ofstream(full, std::ios::binary | std::ios::trunc) << content;
        }
        REQUIRE(run_command({"chown", "-R", name + ":", home.string()}).exit_code == 0);
        available = true;
    }

    /// Lets this user log in to `sshd` with the test key: sshd reads the key list as the user.
    void allow_on(const TestSshd& sshd) const {
        std::filesystem::permissions(
            sshd.dir.path() / "authorized_keys",
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);
    }

    /// ssh://NAME@127.0.0.1:PORT.
    [[nodiscard]] std::string url(const TestSshd& sshd) const {
        return "ssh://" + name + "@127.0.0.1:" + std::to_string(sshd.port);
    }

    /// A new directory `path` owned by this user (for what it writes in a test).
    [[nodiscard]] std::filesystem::path own(const std::filesystem::path& path) const {
        std::filesystem::create_directories(path);
        REQUIRE(run_command({"chown", name + ":", path.string()}).exit_code == 0);
        return path;
    }

    /// The lines of a file in its home ("" lines included), or none when it does not exist.
    [[nodiscard]] std::vector<std::string> lines_of(const std::string& path) const {
        std::vector<std::string> lines;
        std::ifstream in(home / path);
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        return lines;
    }
};

}  // namespace ncclsweep::test
