#include "auth/origin_credentials.h"

#include <gtest/gtest.h>

namespace kturn::auth {
namespace {

const std::vector<std::string> kOrigins = {"https://10.252.1.11:13478", "https://10.252.2.11:13478",
                                           "file:///etc/a=b.yaml"};

TEST(ParseOriginCredentials, EachOriginGetsItsOwnFilesByIndex) {
  auto parsed = parseOriginCredentials({"https://10.252.2.11:13478=/run/b/token,/run/b/ca.crt",
                                        "https://10.252.1.11:13478=/run/a/token"},
                                       kOrigins);
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 3u);
  ASSERT_TRUE((*parsed)[0]);
  EXPECT_EQ((*parsed)[0]->token_file, "/run/a/token");
  EXPECT_EQ((*parsed)[0]->ca_file, "");
  ASSERT_TRUE((*parsed)[1]);
  EXPECT_EQ((*parsed)[1]->token_file, "/run/b/token");
  EXPECT_EQ((*parsed)[1]->ca_file, "/run/b/ca.crt");
  EXPECT_FALSE((*parsed)[2]);
}

TEST(ParseOriginCredentials, TheLongestOriginWinsSoAnOriginMayHoldAnEqualsSign) {
  auto parsed = parseOriginCredentials({"file:///etc/a=b.yaml=/run/token"},
                                       {"file:///etc/a", "file:///etc/a=b.yaml"});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_FALSE((*parsed)[0]);
  ASSERT_TRUE((*parsed)[1]);
  EXPECT_EQ((*parsed)[1]->token_file, "/run/token");
}

TEST(ParseOriginCredentials, ErrorsNameTheValue) {
  auto unknown = parseOriginCredentials({"https://10.9.9.9:13478=/t"}, kOrigins);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Error::Code::kInvalidArgument);
  EXPECT_EQ(unknown.error().message,
            "--cds-credentials https://10.9.9.9:13478=/t: want "
            "<origin>=<token-file>[,<ca-file>] with an origin given to -c");
  // The origin alone, without '=': not a match either.
  EXPECT_FALSE(parseOriginCredentials({"https://10.252.1.11:13478"}, kOrigins));
  auto empty = parseOriginCredentials({"https://10.252.1.11:13478=,/ca"}, kOrigins);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message,
            "--cds-credentials https://10.252.1.11:13478=,/ca: an empty file name");
  EXPECT_FALSE(parseOriginCredentials({"https://10.252.1.11:13478=/t,"}, kOrigins));
  auto twice = parseOriginCredentials(
      {"https://10.252.1.11:13478=/t", "https://10.252.1.11:13478=/u"}, kOrigins);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message,
            "--cds-credentials https://10.252.1.11:13478=/u: origin https://10.252.1.11:13478 "
            "named twice");
}

TEST(ParseOriginCredentials, NoValuesNoCredentials) {
  auto parsed = parseOriginCredentials({}, kOrigins);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->size(), 3u);
  for (const auto& each : *parsed) EXPECT_FALSE(each);
}

}  // namespace
}  // namespace kturn::auth
