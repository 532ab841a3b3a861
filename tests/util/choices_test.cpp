#include "util/choices.h"

#include <ddp/errors.h>
#include <gtest/gtest.h>

#include <string>

TEST(Choices, OneOfTheChoicesPasses) {
  EXPECT_NO_THROW(ddp::util::require_choice("--x", "b", {"a", "b"}));
  EXPECT_NO_THROW(ddp::util::require_choice("--x", "a", {"a"}));
}

TEST(Choices, AnythingElseNamesTheFlagTheValueAndTheChoices) {
  try {
    ddp::util::require_choice("--x", "c", {"a", "b"});
    ADD_FAILURE() << "no ConfigError";
  } catch (const ddp::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "--x='c' is not one of a, b");
    EXPECT_EQ(e.exit_code(), 2);
  }
  EXPECT_THROW(ddp::util::require_choice("--x", "A", {"a"}), ddp::ConfigError);  // case matters
  EXPECT_THROW(ddp::util::require_choice("--x", "", {"a"}), ddp::ConfigError);
}
