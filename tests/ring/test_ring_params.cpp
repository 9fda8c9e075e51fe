// RingParams: derived sizes of valid rings, typed errors for everything else.
#include <gtest/gtest.h>

#include "safhire/core/error.hpp"
#include "safhire/ring/ring_params.hpp"
#include "test_util.hpp"

namespace {

using safhire::ErrorCode;
using safhire::ring::RingParams;
using safhire::testing::code_of;

TEST(RingParams, PaperRings) {
  const RingParams r37(3, 7), r74(7, 4), r55(5, 5);
  EXPECT_EQ(r37.M(), 2187U);
  EXPECT_EQ(r37.m(), 729U);
  EXPECT_EQ(r37.N(), 1458U);
  EXPECT_EQ(r74.M(), 2401U);
  EXPECT_EQ(r74.N(), 2058U);
  EXPECT_EQ(r55.M(), 3125U);
  EXPECT_EQ(r55.N(), 2500U);
  EXPECT_EQ(r55.power(3), 125U);
  EXPECT_EQ(RingParams(3, 1).N(), 2U);
  EXPECT_EQ(RingParams(3, 1).m(), 1U);
  EXPECT_EQ(r37.name(), "3^7 (M = 2187, N = 1458)");
}

TEST(RingParams, InvalidParametersAreTypedErrors) {
  for (auto [t, a] : {std::pair{2U, 1U},
                      {2U, 0U},
                      {2U, 19U},
                      {2U, 64U},
                      {9U, 2U},
                      {1U, 3U},
                      {0U, 1U},
                      {4U, 2U},
                      {15U, 2U},
                      {3U, 0U},
                      {3U, 12U},
                      {5U, 9U},
                      {7U, 40U},
                      {65537U, 3U},
                      {4294967291U, 1U}}) {
    EXPECT_EQ(code_of([t = t, a = a] { RingParams(t, a); }), ErrorCode::invalid_parameters)
        << t << "^" << a;
  }
  EXPECT_THROW(RingParams(3, 7).power(8), safhire::Error);
}

TEST(RingParams, PowerOfTwoRings) {
  for (std::uint32_t a = 2; a <= 18; ++a) {
    const RingParams r(2, a);
    EXPECT_TRUE(r.power_of_two());
    EXPECT_EQ(r.N(), 1U << (a - 1));
    EXPECT_EQ(r.M(), 2 * r.N());
    EXPECT_EQ(r.m(), r.N());  // one block: X^N = -1
  }
  EXPECT_EQ(RingParams(2, 17).name(), "2^17 (M = 131072, N = 65536)");
  EXPECT_FALSE(RingParams(3, 7).power_of_two());
}

}  // namespace
