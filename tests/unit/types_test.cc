#include "comm/types.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtbench::comm {

TEST(Types, RoundTripNames) {
  for (auto d : all_dtypes()) EXPECT_EQ(parse_dtype(to_string(d)), d);
  for (auto o : all_ops()) EXPECT_EQ(parse_op(to_string(o)), o);
  for (auto c : all_collectives()) EXPECT_EQ(parse_collective(to_string(c)), c);
  EXPECT_EQ(parse_dtype("fp16"), DType::kFloat16);
  EXPECT_EQ(parse_dtype("bf16"), DType::kBFloat16);
  EXPECT_EQ(element_size(DType::kBFloat16), 2u);
  EXPECT_EQ(element_size(DType::kInt64), 8u);
}

TEST(Types, UnknownNamesListValidOnes) {
  try {
    parse_dtype("float8");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos);
  }
  EXPECT_THROW(parse_op("xor"), UsageError);
  EXPECT_THROW(parse_collective("gatherv"), UsageError);
  EXPECT_EQ(parse_collective("gather"), Collective::kGather);
  EXPECT_EQ(to_string(Collective::kScatter), "scatter");
}

}  // namespace dtbench::comm
