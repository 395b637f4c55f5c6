// metrics.jsonl (lib/io/metrics.hpp): a record whose string is no valid UTF-8 (what sampling an
// untrained model during training writes: byte-level BPE tokens that are half a character)
// becomes one line of valid JSON with U+FFFD for each bad byte, instead of ending the run.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "lib/io/metrics.hpp"
#include "tests/unit/scratch_dir_test.hpp"

namespace eth::test {
namespace {

class Metrics : public ScratchDirTest {};

TEST_F(Metrics, AStringThatIsNoUtf8IsWrittenWithReplacementCharacters) {
  const std::string path = this->path("metrics.jsonl");
  {
    MetricsWriter writer(path);
    writer.write({{"step", 2}, {"sample", std::string("In the beginning\xE4\xB8 and \x8B")}});
    writer.write({{"step", 3}, {"loss", 1.5}});
  }
  std::ifstream in(path);
  std::string first, second;
  ASSERT_TRUE(std::getline(in, first) && std::getline(in, second));
  const nlohmann::json record = nlohmann::json::parse(first);  // throws on invalid UTF-8
  EXPECT_EQ(record.at("sample").get<std::string>(), "In the beginning\xEF\xBF\xBD and \xEF\xBF\xBD");
  EXPECT_EQ(nlohmann::json::parse(second).at("step").get<int>(), 3);
}

}  // namespace
}  // namespace eth::test
