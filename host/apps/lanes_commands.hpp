// The lanes commands of the `safhire` program (lanes_commands.cpp): present where the build has
// the lanes (GMP found).
#pragma once

#include "command_support.hpp"
#include "safhire/lanes/context.hpp"

namespace safhire::apps {

// The space's fields of a lanes command's JSON: name, N, n, beta, lanes, bits, security, chain.
void write_space(JsonWriter& json, const lanes::LaneContext& context);

// safhire lanes demo|refresh|field|compare|convert|digits [options] (usage: safhire lanes).
int run_lanes(int argc, char** argv);
// safhire lanes compare (lanes_compare.cpp): the lanes beside the mod-2^n baseline.
int run_lanes_compare(int argc, char** argv);
// safhire lanes convert (lanes_convert.cpp): form B -> A -> B, every digit checked.
int run_lanes_convert(int argc, char** argv);
// safhire lanes digits (lanes_digits.cpp): comparisons, digit and bit extraction and
// from_digits on canonical digits, every result checked.
int run_lanes_digits(int argc, char** argv);
// The lanes part of `safhire info`: the named and test lane spaces with their security.
void print_lane_spaces();

}  // namespace safhire::apps
