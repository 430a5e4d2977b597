// Typed reads from an object's JSON tree that never throw. A field of the wrong type reads as
// absent and leaves a problem naming the field ("spec.listeners[1].port: expected an integer, got
// a string"), which the renderer turns into a status condition: a bad manifest costs its own
// status, never the process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/object.h"

namespace kturn::k8s {

class FieldReader {
 public:
  // Absent and null fields read as nullopt without a problem.
  std::optional<std::string> string(const Json& parent, std::string_view key,
                                    std::string_view path);
  std::optional<int64_t> integer(const Json& parent, std::string_view key, std::string_view path);
  std::optional<bool> boolean(const Json& parent, std::string_view key, std::string_view path);
  // nullptr when absent, null or of the wrong type (the latter with a problem).
  const Json* object(const Json& parent, std::string_view key, std::string_view path);
  const Json* array(const Json& parent, std::string_view key, std::string_view path);
  std::vector<std::string> stringList(const Json& parent, std::string_view key,
                                      std::string_view path);
  StringMap stringMap(const Json& parent, std::string_view key, std::string_view path);

  // Records a problem found by the caller (a value of the right type but out of range).
  void problem(std::string message) { problems_.push_back(std::move(message)); }
  const std::vector<std::string>& problems() const { return problems_; }
  std::vector<std::string> takeProblems() { return std::move(problems_); }

 private:
  const Json* find(const Json& parent, std::string_view key);
  void wrongType(std::string_view path, std::string_view key, std::string_view want,
                 const Json& got);

  std::vector<std::string> problems_{};
};

// "spec.listeners" + 2 → "spec.listeners[2]".
std::string indexPath(std::string_view path, size_t index);
// "spec" + "listeners" → "spec.listeners".
std::string fieldPath(std::string_view path, std::string_view key);
// "a string", "an integer", ... for messages.
std::string_view describeType(const Json& value);

}  // namespace kturn::k8s
