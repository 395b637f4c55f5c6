// A user's mistake gets one clear line naming the file (or option), the field and what was
// expected. Each test makes one mistake and checks the message says all three. (Mistakes in
// eth_train's options are checked end to end, under mpirun, by tests/cli/eth_train_cli.sh.)
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "lib/base/input_error.hpp"
#include "lib/io/checkpoint.hpp"
#include "lib/io/token_data.hpp"
#include "lib/model/model_config.hpp"
#include "lib/runtime/fault_injection.hpp"
#include "tests/unit/expect_input_error.hpp"
#include "tests/unit/scratch_dir_test.hpp"

namespace eth::test {
namespace {

class InputErrors : public ScratchDirTest {
 protected:
  // A shard in llm.c's format; `declared` tokens in the header, `tokens` actually written
  // (uint16 or uint32, as the vector holds them).
  template <typename Id = uint16_t>
  std::string write_shard(const std::string& name, const std::vector<Id>& tokens, int32_t magic = 20240520,
                          int32_t version = 1, int64_t declared = -1) {
    std::vector<int32_t> header(256, 0);
    header[0] = magic;
    header[1] = version;
    header[2] = static_cast<int32_t>(declared < 0 ? static_cast<int64_t>(tokens.size()) : declared);
    std::ofstream out(path(name), std::ios::binary);
    out.write(reinterpret_cast<const char*>(header.data()), 256 * sizeof(int32_t));
    out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * sizeof(Id)));
    return path(name);
  }
};

const char* kGoodModel =
    "name: t\nvocab_size: 97\npadded_vocab_size: 128\nmax_seq_len: 16\nnum_layers: 2\nnum_heads: 2\nchannels: 32\n";

std::string replace_line(std::string text, const std::string& key, const std::string& line) {
  const size_t at = text.find(key + ":");
  const size_t end = text.find('\n', at);
  return text.replace(at, end - at, line);
}

// Checkpoints the fuzzer damaged (tests/fuzz, before --resume checked a file's seal first): a
// stored type, an attribute or a dataspace broken while HDF5 still opens the file. Each is one
// line naming the file; under ASan (scripts/sanitize.sh) the reader leaves nothing open behind
// (the first two leaked HDF5 objects on their error paths; the third made HDF5 allocate a
// conversion buffer of a damaged type's size).
TEST_F(InputErrors, DamagedCheckpointsAreReported) {
  const ModelConfig micro = gpt2_config("fuzz-micro", 8, 8, 4, 1, 1, 4);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator("tests/unit/data/damaged_checkpoints")) {
    const std::string reason = verify_checkpoint(e.path().string(), micro);
    EXPECT_EQ(reason.rfind(e.path().string() + ": ", 0), 0u) << e.path() << ": " << reason;
    EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
    files++;
  }
  EXPECT_EQ(files, 3);
}

TEST_F(InputErrors, GoodModelLoads) {
  const ModelConfig c = load_model_config(write_text("good.yaml", kGoodModel));
  EXPECT_EQ(c.vocab_size, 97);
  EXPECT_EQ(c.head_size(), 16);
}

TEST_F(InputErrors, ModelFieldMissing) {
  const std::string path = write_text("m.yaml", replace_line(kGoodModel, "num_heads", ""));
  expect_input_error([&] { load_model_config(path); }, {path, "num_heads", "expected an integer in [1, ", "missing"});
}

TEST_F(InputErrors, ModelFieldNotANumber) {
  const std::string path = write_text("m.yaml", replace_line(kGoodModel, "channels", "channels: wide"));
  expect_input_error([&] { load_model_config(path); }, {path, "channels", "expected an integer in [1, ", "wide"});
}

TEST_F(InputErrors, ModelFieldNegative) {
  const std::string path = write_text("m.yaml", replace_line(kGoodModel, "num_layers", "num_layers: -3"));
  expect_input_error([&] { load_model_config(path); }, {path, "num_layers", "expected an integer in [1, ", "-3"});
}

TEST_F(InputErrors, ModelPaddedVocabTooSmall) {
  const std::string path = write_text("m.yaml", replace_line(kGoodModel, "padded_vocab_size", "padded_vocab_size: 64"));
  expect_input_error([&] { load_model_config(path); }, {path, "padded_vocab_size", "expected >= vocab_size (97)"});
}

TEST_F(InputErrors, ModelChannelsNotDivisibleByHeads) {
  const std::string path = write_text("m.yaml", replace_line(kGoodModel, "num_heads", "num_heads: 3"));
  expect_input_error([&] { load_model_config(path); }, {path, "channels", "multiple of num_heads (3)"});
}

TEST_F(InputErrors, ModelFileMissing) {
  const std::string path = ScratchDirTest::path("absent.yaml");
  expect_input_error([&] { load_model_config(path); }, {path, "file", "expected a readable model YAML"});
}

TEST_F(InputErrors, ModelNotYaml) {
  const std::string path = write_text("m.yaml", "vocab_size: [1, 2\n");
  expect_input_error([&] { load_model_config(path); }, {path, "line", "expected valid YAML"});
}

TEST_F(InputErrors, ShardLoadsAndStreams) {
  const std::string path = write_shard("ok.bin", {1, 2, 3, 4, 5, 6, 7, 8, 9});
  SampleStream stream({load_token_shard(path, 10)}, 4, 7, false);
  EXPECT_EQ(stream.windows(), 2u);  // (9 - 1) / 4
  int32_t in[4], tg[4];
  stream.sample(1, in, tg);
  EXPECT_EQ(in[0], 5);
  EXPECT_EQ(tg[3], 9);
}

// Llama 3's layout (magic 20240801, version 7, uint32 ids) streams the same way, ids past 65,535
// included, and names its token past the vocabulary by position, id and vocab_size.
TEST_F(InputErrors, Shard32LoadsAndStreams) {
  const std::string path = write_shard<uint32_t>("ok32.bin", {1, 2, 3, 4, 70000, 6, 7, 8, 128255}, 20240801, 7);
  const TokenShard shard = load_token_shard(path, 128256);
  EXPECT_EQ(shard.tokens, 9u);
  EXPECT_EQ(shard.token_bytes, 4);
  SampleStream stream({shard}, 4, 7, false);
  int32_t in[4], tg[4];
  stream.sample(1, in, tg);
  EXPECT_EQ(in[0], 70000);
  EXPECT_EQ(tg[3], 128255);
  expect_input_error([&] { load_token_shard(path, 128000); }, {path, "token 8", "below vocab_size 128000", "got 128255"});
}

TEST_F(InputErrors, Shard32WrongVersionOrSize) {
  const std::string path = write_shard<uint32_t>("v.bin", {1, 2, 3}, 20240801, 1);
  expect_input_error([&] { load_token_shard(path, 10); }, {path, "version", "expected 7 for magic 20240801", "got 1"});
  // uint16 ids under a uint32 header: half the bytes the count needs.
  const std::string narrow = write_shard<uint16_t>("n.bin", {1, 2, 3, 4}, 20240801, 7);
  expect_input_error([&] { load_token_shard(narrow, 10); },
                     {narrow, "size", "expected 1040 bytes", "4 bytes each", "got 1032 bytes"});
}

TEST_F(InputErrors, ShardWrongMagic) {
  const std::string path = write_shard("s.bin", {1, 2, 3}, 12345);
  expect_input_error([&] { load_token_shard(path, 10); }, {path, "magic", "expected 20240520 (uint16 tokens) or 20240801 (uint32 tokens)", "got 12345"});
}

TEST_F(InputErrors, ShardWrongVersion) {
  const std::string path = write_shard("s.bin", {1, 2, 3}, 20240520, 2);
  expect_input_error([&] { load_token_shard(path, 10); }, {path, "version", "expected 1", "got 2"});
}

TEST_F(InputErrors, ShardTruncated) {
  const std::string path = write_shard("s.bin", {1, 2, 3}, 20240520, 1, 5);
  expect_input_error([&] { load_token_shard(path, 10); }, {path, "size", "expected 1034 bytes", "got 1030 bytes"});
}

TEST_F(InputErrors, ShardShorterThanItsHeader) {
  const std::string path = write_text("s.bin", "not a shard");
  expect_input_error([&] { load_token_shard(path, 10); }, {path, "header", "expected 1024 bytes"});
}

TEST_F(InputErrors, ShardTokenOutOfVocabulary) {
  const std::string path = write_shard("s.bin", {1, 2, 10, 3});
  expect_input_error([&] { load_token_shard(path, 10); }, {path, "token 2", "below vocab_size 10", "got 10"});
}

TEST_F(InputErrors, ShardMissing) {
  const std::string path = ScratchDirTest::path("absent.bin");
  expect_input_error([&] { load_token_shard(path, 10); }, {path, "file", "expected a readable llm.c token shard"});
}

TEST_F(InputErrors, ShardCutUnderAStreamIsAShortRead) {
  // The stream reads a window at a time: a file cut after loading fails at the first window
  // past the cut, naming the file, not with stale or garbage tokens.
  const std::string path = write_shard("cut.bin", {1, 2, 3, 4, 5, 6, 7, 8, 9});
  SampleStream stream({load_token_shard(path, 10)}, 4, 7, false);
  std::filesystem::resize_file(path, 1024 + 2 * 5);  // the header and tokens 0-4
  int32_t in[4], tg[4];
  stream.sample(0, in, tg);  // tokens 0-4: still there
  EXPECT_EQ(tg[3], 5);
  expect_input_error([&] { stream.sample(1, in, tg); },
                     {path, "tokens 4 to 8", "1042 bytes it had when loaded", "a short read (2 bytes; the file now has 1034)"});
}

TEST_F(InputErrors, FaultSpecifications) {
  const FaultSpec f = parse_fault("hang:rank=2:step=5:phase=reduction");
  EXPECT_EQ(f.kind, FaultKind::hang);
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.step, 5);
  EXPECT_EQ(f.phase, FaultPhase::reduction);
  EXPECT_EQ(parse_fault("nan:step=3:rank=1:block=0").block, 0);
  EXPECT_EQ(parse_fault("truncate-shard:rank=0:step=1").kind, FaultKind::truncate_shard);
  for (const char* bad : {"crash:rank=0:step=1:phase=forward", "abort:rank=0:step=1", "abort:rank=0:phase=forward",
                          "kill:rank=-1:step=1:phase=forward", "hang:rank=0:step=0:phase=forward",
                          "abort:rank=0:step=1:phase=optimizer", "nan:rank=0:step=1", "nan:rank=0:step=1:block=x",
                          "truncate-shard:rank=0:step=1:phase=forward", "abort:rank=0:step=1:phase=forward:extra"})
    expect_input_error([&] { parse_fault(bad); }, {"--inject-fault", "expected KIND:rank=R:step=S", bad});
}

TEST_F(InputErrors, ShardTooShortForTheSequence) {
  const std::string path = write_shard("s.bin", {1, 2, 3});
  expect_input_error([&] { SampleStream({load_token_shard(path, 10)}, 4, 1, true); },
                     {path, "token count", "at least seq_len + 1 = 5 tokens", "got 3"});
}

}  // namespace
}  // namespace eth::test
