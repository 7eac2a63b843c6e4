// Cheap figures quoted in docs/ are the code's: every "N built-in rules" (and "of the N
// built-ins") in README.md and docs/*.md is the size of the built-in catalog, and the table of
// docs/watcher.md has one row per rule, no more. A rule added without its docs fails here.
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "core/watch/rule_catalog.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;

namespace {

struct QuotedFigure {
    std::string file;
    std::string text;
    std::size_t value = 0;
};

/// Every match of `pattern` (one group: the number) in README.md and docs/*.md.
std::vector<QuotedFigure> figures_quoted(const std::regex& pattern) {
    std::vector<std::filesystem::path> files{test::source_path("README.md")};
    for (const auto& entry : std::filesystem::directory_iterator(test::source_path("docs")))
        if (entry.path().extension() == ".md") files.push_back(entry.path());
    std::vector<QuotedFigure> out;
    for (const auto& file : files) {
        const std::string text = test::read_file(file);
        for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it)
            out.push_back({file.filename().string(), it->str(), std::stoul((*it)[1].str())});
    }
    return out;
}

}  // namespace

TEST_CASE("docs: every quoted count of built-in rules is the catalog's") {
    // "46 built-in rules", "(29 of the 46 built-ins", "46 rules as POSIX extended regexes"
    // (docs/benchmarks-watcher.md, docs/watcher.md); historical figures say "rules then".
    std::vector<QuotedFigure> quoted;
    for (const char* pattern :
         {R"(\b([0-9]+) built-in rules)", R"(of the ([0-9]+) built-ins)", R"(\b([0-9]+) rules as\b)"}) {
        const auto found = figures_quoted(std::regex(pattern));
        INFO(pattern);
        CHECK_FALSE(found.empty());  // a reworded sentence must not pass unread
        quoted.insert(quoted.end(), found.begin(), found.end());
    }
    for (const auto& figure : quoted) {
        INFO(figure.file << ": \"" << figure.text << "\"");
        CHECK(figure.value == builtin_rules().size());
    }
}

TEST_CASE("docs/watcher.md's table of built-in rules has one row per rule") {
    const std::string doc = test::read_file(test::source_path("docs/watcher.md"));
    const auto begin = doc.find("\n## Built-in rules\n");
    REQUIRE(begin != std::string::npos);
    const auto end = doc.find("\n## ", begin + 1);
    const std::string section = doc.substr(begin, end - begin);
    std::size_t rows = 0;
    for (std::size_t at = section.find("\n| `"); at != std::string::npos; at = section.find("\n| `", at + 1))
        ++rows;
    CHECK(rows == builtin_rules().size());
}
