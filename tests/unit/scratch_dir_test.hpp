// A test fixture with a fresh directory of its own, removed afterwards, and a way to write
// text files into it: for tests that feed files to the loaders.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace eth::test {

class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The process id too: two builds' suites running at once (a sanitized one beside a plain
    // one) must not share, and remove, each other's files.
    dir_ = std::filesystem::temp_directory_path() /
           ("eth_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write_text(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

  std::filesystem::path dir_;
};

}  // namespace eth::test
