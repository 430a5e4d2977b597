#include "config/config_reference.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kturn::config {
namespace {

std::filesystem::path committedReference() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "docs" /
         "config-reference.md";
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "line 12: ..." for the first line where the two texts differ.
std::string firstDifference(const std::string& have, const std::string& want) {
  std::istringstream a(have);
  std::istringstream b(want);
  std::string line_a;
  std::string line_b;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, line_a));
    const bool more_b = static_cast<bool>(std::getline(b, line_b));
    if (!more_a && !more_b) return "they differ only in the final line break";
    if (!more_a || !more_b || line_a != line_b) {
      return "line " + std::to_string(line) +
             ":\n  committed: " + (more_a ? line_a : "<end of file>") +
             "\n  rendered:  " + (more_b ? line_b : "<end of file>");
    }
  }
}

TEST(ConfigReference, CommittedFileIsWhatTheSchemaRenders) {
  const auto path = committedReference();
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const std::string committed = readFile(path);
  const std::string rendered = renderConfigReference(configSchema());
  EXPECT_TRUE(committed == rendered)
      << "docs/config-reference.md is not what src/config/schema.cc renders. Regenerate it with "
         "`make config-reference` (or `cmake --build build --target config-reference`) and "
         "commit it. First difference, "
      << firstDifference(committed, rendered);
}

TEST(ConfigReference, OneTablePerContainerWithEscapedCells) {
  const FieldSpec schema[] = {
      {.path = "version", .presence = Presence::kRequired, .values = {"v1"}, .description = "V."},
      {.path = "listeners", .type = FieldType::kObjectList, .description = "Sockets."},
      {.path = "listeners[].port",
       .type = FieldType::kInteger,
       .default_value = "3478",
       .range = IntRange{1, 65535},
       .zero_is_unset = true,
       .description = "Port | to bind."},
      {.path = "listeners[].mode",
       .origin = Origin::kKturn,
       .presence = Presence::kConditional,
       .required_when = "`port` is 443",
       .values = {"A", "B"},
       .aliases = {"a"},
       .any_case = true,
       .description = "Mode."},
  };
  const std::string md = renderConfigReference(schema);
  EXPECT_NE(md.find("## Top level\n\n| field | type | default | accepted | required | origin | "
                    "description |\n|---|---|---|---|---|---|---|\n"
                    "| `version` | string | — | `v1` | yes | STUNner | V. |\n"
                    "| `listeners` | list of objects | — |  |  | STUNner | Sockets. |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("## `listeners[]`\n\nSockets.\n\n| field |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `listeners[].port` | integer | `3478` | 1–65535; 0: the default |  | "
                    "STUNner | Port \\| to bind. |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `listeners[].mode` | string | — | `A`, `B`; aliases `a`; any letter case "
                    "| if `port` is 443 | **kturn** | Mode. |\n"),
            std::string::npos)
      << md;
}

TEST(ConfigReference, EveryFieldHasARow) {
  const std::string md = renderConfigReference(configSchema());
  for (const FieldSpec& f : configSchema()) {
    EXPECT_NE(md.find("| `" + std::string(f.path) + "` |"), std::string::npos) << f.path;
  }
}

}  // namespace
}  // namespace kturn::config
