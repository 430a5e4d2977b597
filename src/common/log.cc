#include "common/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cctype>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kturn::log {
namespace {

constexpr std::string_view kDefaultScope = "kturnd";

std::optional<spdlog::level::level_enum> parseLevel(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "TRACE") return spdlog::level::trace;
  if (upper == "DEBUG") return spdlog::level::debug;
  if (upper == "INFO") return spdlog::level::info;
  if (upper == "WARN" || upper == "WARNING") return spdlog::level::warn;
  if (upper == "ERROR") return spdlog::level::err;
  if (upper == "DISABLE" || upper == "OFF") return spdlog::level::off;
  return std::nullopt;
}

void appendJsonString(std::string_view s, spdlog::memory_buf_t& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append(std::string_view("\\n"));
    } else if (u < 0x20) {
      const char esc[] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 15]};
      out.append(esc, esc + sizeof esc);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

// One JSON object per line: {"time","level","scope","msg"}. A message that is itself a JSON
// object (a session record) has its fields spliced in after "scope" instead of a "msg" string,
// so log pipelines see one flat record.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& out) override {
    const auto t = std::chrono::system_clock::to_time_t(msg.time);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()) % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    const size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    out.append(std::string_view(R"({"time":")"));
    out.append(stamp, stamp + n);
    const char frac[] = {'.',
                         static_cast<char>('0' + ms.count() / 100),
                         static_cast<char>('0' + ms.count() / 10 % 10),
                         static_cast<char>('0' + ms.count() % 10),
                         'Z',
                         '"'};
    out.append(frac, frac + sizeof frac);
    out.append(std::string_view(R"(,"level":)"));
    const auto level = spdlog::level::to_string_view(msg.level);
    appendJsonString({level.data(), level.size()}, out);
    out.append(std::string_view(R"(,"scope":)"));
    appendJsonString({msg.logger_name.data(), msg.logger_name.size()}, out);
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    if (payload.size() > 2 && payload.front() == '{' && payload.back() == '}') {
      out.push_back(',');
      out.append(payload.substr(1));  // the object's fields and its closing brace
    } else {
      out.append(std::string_view(R"(,"msg":)"));
      appendJsonString(payload, out);
      out.push_back('}');
    }
    out.append(std::string_view("\n"));
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// Writes to its file through the formatter, at most kLinesPerSecond lines a second outside the
// session scope. spdlog calls sink_it_ under the base sink's mutex.
class RateLimitedSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit RateLimitedSink(std::FILE* out) : out_(out) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const bool exempt =
        std::string_view(msg.logger_name.data(), msg.logger_name.size()) == kSessionScope;
    const auto second =
        std::chrono::duration_cast<std::chrono::seconds>(msg.time.time_since_epoch());
    if (second != window_) {
      window_ = second;
      lines_ = 0;
      if (suppressed_ > 0) {
        const std::string note = std::to_string(suppressed_) + " log lines suppressed (more than " +
                                 std::to_string(kLinesPerSecond) + " a second)";
        suppressed_ = 0;
        spdlog::details::log_msg notice(msg.time, {}, msg.logger_name, spdlog::level::warn, note);
        write(notice);
      }
    }
    if (!exempt && ++lines_ > kLinesPerSecond) {
      ++suppressed_;
      return;
    }
    write(msg);
  }
  void flush_() override { std::fflush(out_); }

 private:
  void write(const spdlog::details::log_msg& msg) {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    std::fwrite(formatted.data(), 1, formatted.size(), out_);
    std::fflush(out_);
  }

  std::FILE* out_;
  std::chrono::seconds window_{0};
  size_t lines_ = 0;
  size_t suppressed_ = 0;
};

std::shared_ptr<spdlog::sinks::sink>& sharedSink() {
  static std::shared_ptr<spdlog::sinks::sink> sink;
  return sink;
}

}  // namespace

Result<Format> parseFormat(std::string_view text) {
  if (text == "text") return Format::kText;
  if (text == "json") return Format::kJson;
  return makeError(Error::Code::kInvalidArgument,
                   "log format \"" + std::string(text) + "\" unknown (text or json)");
}

void setup(Format format, std::FILE* out) {
  auto sink = std::make_shared<RateLimitedSink>(out);
  if (format == Format::kJson) {
    sink->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l [%n] %v");
  }
  sharedSink() = sink;
  auto logger = std::make_shared<spdlog::logger>(std::string(kDefaultScope), sink);
  const auto previous = spdlog::default_logger();
  logger->set_level(previous ? previous->level() : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

std::shared_ptr<spdlog::logger> scope(std::string_view name) {
  static std::mutex creating;
  std::lock_guard lock(creating);
  const std::string key(name);
  if (auto existing = spdlog::get(key)) return existing;
  const auto& sink = sharedSink();
  auto logger =
      sink ? std::make_shared<spdlog::logger>(key, sink)
           : std::make_shared<spdlog::logger>(key, spdlog::default_logger()->sinks().begin(),
                                              spdlog::default_logger()->sinks().end());
  logger->set_level(spdlog::default_logger()->level());
  spdlog::register_logger(logger);  // throws only on a duplicate name, excluded above
  return logger;
}

Result<void> configure(std::string_view spec) {
  std::vector<std::pair<std::string, spdlog::level::level_enum>> settings;
  size_t pos = 0;
  while (pos <= spec.size()) {
    const size_t comma = spec.find(',', pos);
    const std::string_view item =
        spec.substr(pos, comma == std::string_view::npos ? spec.size() - pos : comma - pos);
    pos = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    const std::string_view scope_name =
        colon == std::string_view::npos ? "all" : item.substr(0, colon);
    const std::string_view level_text =
        colon == std::string_view::npos ? item : item.substr(colon + 1);
    const auto level = parseLevel(level_text);
    if (!level) {
      return makeError(Error::Code::kInvalidArgument,
                       "log level \"" + std::string(level_text) + "\" unknown");
    }
    settings.emplace_back(std::string(scope_name), *level);
  }
  for (const auto& [name, level] : settings) {
    if (name == "all") {
      spdlog::set_level(level);  // every registered logger, the default one included
    } else {
      scope(name)->set_level(level);
    }
  }
  return {};
}

}  // namespace kturn::log
