#include "k8s/manifest_files.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "k8s/manifest.h"

namespace kturn::k8s {
namespace {

Result<std::vector<Object>> loadFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return makeError(Error::Code::kIo, file.string() + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  auto objects = loadManifests(text.str());
  if (!objects)
    return makeError(objects.error().code, file.string() + ": " + objects.error().message);
  return objects;
}

bool isManifest(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

}  // namespace

Result<std::vector<Object>> loadManifestFiles(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    if (!std::filesystem::exists(path, ec)) {
      return makeError(Error::Code::kNotFound, path.string() + ": no such file or directory");
    }
    return loadFile(path);
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (entry.is_regular_file() && isManifest(entry.path())) files.push_back(entry.path());
  }
  if (ec) return makeError(Error::Code::kIo, path.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<Object> all;
  for (const auto& f : files) {
    auto objects = loadFile(f);
    if (!objects) return objects.error();
    for (Object& o : *objects) all.push_back(std::move(o));
  }
  return all;
}

}  // namespace kturn::k8s
