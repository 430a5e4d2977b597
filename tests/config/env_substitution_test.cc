#include "config/env_substitution.h"

#include <gtest/gtest.h>

#include <map>

namespace kturn::config {
namespace {

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ExpandEnv, BothSyntaxes) {
  const auto env = fakeEnv({{"A", "x"}, {"B_2", "y"}, {"a b", "z"}});
  EXPECT_EQ(expandEnv("$A-${B_2}", env), "x-y");
  EXPECT_EQ(expandEnv("$B_2.$A", env), "y.x");  // names are [A-Za-z0-9_]+
  EXPECT_EQ(expandEnv("${a b}", env), "z");     // braces take anything up to '}'
  EXPECT_EQ(expandEnv("no vars", env), "no vars");
}

TEST(ExpandEnv, UnsetIsEmpty) { EXPECT_EQ(expandEnv("[$NOPE][${NOPE}]", fakeEnv({})), "[][]"); }

TEST(ExpandEnv, GoEdgeCases) {
  const auto env = fakeEnv({{"1", "one"}, {"A", "x"}});
  EXPECT_EQ(expandEnv("cost: 5$", env), "cost: 5$");  // trailing '$' kept
  EXPECT_EQ(expandEnv("a $ b", env), "a $ b");        // '$' before a non-name kept
  EXPECT_EQ(expandEnv("a$:b", env), "a$:b");
  EXPECT_EQ(expandEnv("$$", env), "");       // "$$" is the shell special "$"
  EXPECT_EQ(expandEnv("$1x", env), "onex");  // digits are one-character specials
  EXPECT_EQ(expandEnv("${1}", env), "one");
  EXPECT_EQ(expandEnv("a${}b", env), "ab");     // "${}" is dropped
  EXPECT_EQ(expandEnv("a${Ab", env), "aAb");    // unclosed "${": the "${" is dropped
  EXPECT_EQ(expandEnv("${A:-dflt}", env), "");  // no shell defaults: one odd name
}

TEST(ExpandEnv, StunnerPortFallback) {
  const auto lookup = [](std::map<std::string, std::string> vars) {
    return withStunnerPortFallback(fakeEnv(std::move(vars)));
  };
  EXPECT_EQ(expandEnv("$STUNNER_PORT", lookup({})), "3478");
  EXPECT_EQ(expandEnv("$STUNNER_PORT", lookup({{"STUNNER_PORT", "4000"}})), "4000");
  EXPECT_EQ(expandEnv("$STUNNER_PORT", lookup({{"STUNNER_PUBLIC_PORT", "5000"}})), "5000");
  EXPECT_EQ(
      expandEnv("$STUNNER_PORT", lookup({{"STUNNER_PORT", "x"}, {"STUNNER_PUBLIC_PORT", "5000"}})),
      "5000");
  EXPECT_EQ(expandEnv("$STUNNER_PORT", lookup({{"STUNNER_PORT", ""}})), "3478");
  EXPECT_EQ(expandEnv("$STUNNER_PORT", lookup({{"STUNNER_PUBLIC_PORT", "abc"}})), "3478");
  EXPECT_EQ(expandEnv("$OTHER", lookup({{"OTHER", "o"}})), "o");
}

}  // namespace
}  // namespace kturn::config
