// kturn's log sink: JSON lines that parse, session records spliced flat, STUNner level specs per
// scope, and the rate limit that keeps a flood of lines out of the log but counts it.
#include "common/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kturn::log {
namespace {

// Captures what the sink writes: setup() into a temporary file, read back line by line.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = std::tmpfile();
    ASSERT_NE(file_, nullptr);
    setup(Format::kJson, file_);
    ASSERT_TRUE(configure("all:INFO"));
  }
  void TearDown() override {
    spdlog::drop_all();
    std::fclose(file_);
  }

  std::vector<std::string> lines() {
    std::fflush(file_);
    std::rewind(file_);
    std::vector<std::string> out;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, file_) != nullptr) {
      std::string line(buf);
      if (!line.empty() && line.back() == '\n') line.pop_back();
      out.push_back(line);
    }
    return out;
  }

  std::FILE* file_ = nullptr;
};

TEST_F(LogTest, JsonLinesEscapeTheMessage) {
  spdlog::info("quote \" backslash \\ newline \n tab \t end");
  const auto written = lines();
  ASSERT_EQ(written.size(), 1u);
  const auto j = nlohmann::json::parse(written[0]);
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["scope"], "kturnd");
  EXPECT_EQ(j["msg"], "quote \" backslash \\ newline \n tab \t end");
  EXPECT_EQ(j["time"].get<std::string>().back(), 'Z');
}

TEST_F(LogTest, SessionRecordsAreSplicedIntoOneFlatObject) {
  scope(kSessionScope)->info(R"({"event":"session-end","bytes_to_peers":42})");
  const auto written = lines();
  ASSERT_EQ(written.size(), 1u);
  const auto j = nlohmann::json::parse(written[0]);
  EXPECT_EQ(j["scope"], "session");
  EXPECT_EQ(j["event"], "session-end");
  EXPECT_EQ(j["bytes_to_peers"], 42);
  EXPECT_FALSE(j.contains("msg"));
}

TEST_F(LogTest, LevelSpecsSelectPerScope) {
  ASSERT_TRUE(configure("all:WARN,cds:DEBUG"));
  spdlog::info("dropped: kturnd is at WARN");
  scope("cds")->debug("kept: cds is at DEBUG");
  scope("config")->info("dropped: config follows all");
  const auto written = lines();
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(written[0])["scope"], "cds");

  EXPECT_FALSE(configure("all:LOUD"));
  EXPECT_EQ(scope("cds")->level(), spdlog::level::debug) << "a bad spec changed levels";
}

TEST_F(LogTest, AFloodIsCutAtTheRateLimitAndCounted) {
  // Wait for the start of a second so the whole burst falls into one window.
  const auto second = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::system_clock::now().time_since_epoch());
  };
  const auto start = second();
  while (second() == start) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (size_t i = 0; i < 3 * kLinesPerSecond; ++i) spdlog::warn("flood {}", i);
  for (size_t i = 0; i < 3 * kLinesPerSecond; ++i) scope(kSessionScope)->info("{{\"n\":{}}}", i);
  const bool same_window = second() == start + std::chrono::seconds(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  spdlog::info("after the flood");

  size_t flood = 0, session = 0;
  std::string notice;
  for (const auto& line : lines()) {
    const auto j = nlohmann::json::parse(line);
    if (j["scope"] == "session") {
      ++session;
    } else if (j.value("msg", "").rfind("flood", 0) == 0) {
      ++flood;
    } else if (j.value("msg", "").find("suppressed") != std::string::npos) {
      notice = j["msg"];
    }
  }
  EXPECT_EQ(session, 3 * kLinesPerSecond) << "session records must never be dropped";
  if (same_window) {
    EXPECT_EQ(flood, kLinesPerSecond);
  }
  EXPECT_LT(flood, 3 * kLinesPerSecond);
  EXPECT_NE(notice.find("log lines suppressed"), std::string::npos);
}

}  // namespace
}  // namespace kturn::log
