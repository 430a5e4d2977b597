#include "auth/token_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kturn::auth {
namespace {

std::string writeTemp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("kturn-token-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(ReadTokenFile, TrimsSurroundingWhiteSpace) {
  const std::string path = writeTemp("ok", "\n  s3cr3t-token \t\r\n");
  auto token = readTokenFile(path);
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "s3cr3t-token");
  std::filesystem::remove(path);
}

TEST(ReadTokenFile, MissingAndEmptyFilesAreErrorsNamingThePath) {
  auto missing = readTokenFile("/nonexistent/token");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Error::Code::kNotFound);
  EXPECT_EQ(missing.error().message, "/nonexistent/token: cannot open");
  const std::string path = writeTemp("empty", " \n");
  auto empty = readTokenFile(path);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message, path + ": empty token");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kturn::auth
