// Golden tests of the renderer (docs/operator.md): every tests/golden/**/input/ folder of manifests
// renders to the YAML stream in the expected.yaml beside it. KTURN_UPDATE_GOLDEN=1 rewrites the
// expected files instead; review every rewritten file by hand before committing it.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "k8s/manifest_files.h"
#include "operator/clock.h"
#include "operator/cluster_snapshot.h"
#include "operator/render_stream.h"
#include "operator/renderer.h"

namespace kturn::op {
namespace {

namespace fs = std::filesystem;

fs::path goldenRoot() {
  if (const char* dir = std::getenv("KTURN_GOLDEN_DIR")) return dir;
  return fs::path(__FILE__).parent_path().parent_path() / "golden";
}

std::vector<fs::path> goldenCases() {
  std::vector<fs::path> cases;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(goldenRoot(), ec);
       it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && it->path().filename() == "input") {
      cases.push_back(it->path().parent_path());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A case's options.yaml, when it has one, sets what the operator's flags set:
// `referenceGrants: enforce|ignore`, `endpointDiscovery: false`, `relayToClusterIP: false`.
RenderOptions goldenOptions(const fs::path& dir) {
  RenderOptions options;
  options.transitionTime = "2024-01-01T00:00:00Z";
  // Certificate dates are judged at a fixed time too: the cases' certificates were issued on
  // 2026-11-29 and are valid for a century.
  options.now = *parseRfc3339("2027-01-01T00:00:00Z");
  if (fs::exists(dir / "options.yaml")) {
    const YAML::Node node = YAML::LoadFile((dir / "options.yaml").string());
    if (node["referenceGrants"]) {
      options.enforceReferenceGrants = node["referenceGrants"].as<std::string>() == "enforce";
    }
    if (node["endpointDiscovery"]) options.endpointDiscovery = node["endpointDiscovery"].as<bool>();
    if (node["relayToClusterIP"]) options.relayToClusterIP = node["relayToClusterIP"].as<bool>();
  }
  return options;
}

class GoldenTest : public ::testing::TestWithParam<fs::path> {};

TEST_P(GoldenTest, RendersExpectedStream) {
  const fs::path dir = GetParam();
  auto objects = k8s::loadManifestFiles(dir / "input");
  ASSERT_TRUE(objects) << objects.error().message;
  const RenderResult result =
      render(ClusterSnapshot::fromObjects(std::move(*objects)), goldenOptions(dir));
  const std::string got = toYamlStream(result);
  const fs::path expected = dir / "expected.yaml";
  const char* update = std::getenv("KTURN_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(expected, std::ios::binary) << got;
    GTEST_SKIP() << "rewrote " << expected;
  }
  ASSERT_TRUE(fs::exists(expected)) << expected << " missing; run with KTURN_UPDATE_GOLDEN=1";
  EXPECT_EQ(readFile(expected), got) << "golden mismatch in " << dir;
}

// The render must be a pure function: the same input twice gives the same bytes.
TEST_P(GoldenTest, IsDeterministic) {
  auto a = k8s::loadManifestFiles(GetParam() / "input");
  auto b = k8s::loadManifestFiles(GetParam() / "input");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(
      toYamlStream(render(ClusterSnapshot::fromObjects(std::move(*a)), goldenOptions(GetParam()))),
      toYamlStream(render(ClusterSnapshot::fromObjects(std::move(*b)), goldenOptions(GetParam()))));
}

std::string caseName(const ::testing::TestParamInfo<fs::path>& info) {
  std::string name = fs::relative(info.param, goldenRoot()).string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenTest, ::testing::ValuesIn(goldenCases()), caseName);

TEST(Golden, CasesExist) { EXPECT_GE(goldenCases().size(), 10u) << goldenRoot(); }

}  // namespace
}  // namespace kturn::op
