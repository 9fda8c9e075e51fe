// Everything a program needs for exact integers modulo beta^n + 1 in CKKS lanes: the spaces, the
// context, encoding, encryption and decryption, the arithmetic, the refresh, the noise model and
// the binary form. docs/lanes.md tours them; examples/ has a program per flow.
#pragma once

#include "safhire/lanes/baseline.hpp"
#include "safhire/lanes/ciphertext.hpp"
#include "safhire/lanes/context.hpp"
#include "safhire/lanes/convert.hpp"
#include "safhire/lanes/digits.hpp"
#include "safhire/lanes/encoder.hpp"
#include "safhire/lanes/encryptor.hpp"
#include "safhire/lanes/evaluator.hpp"
#include "safhire/lanes/fields.hpp"
#include "safhire/lanes/integers.hpp"
#include "safhire/lanes/lane_space.hpp"
#include "safhire/lanes/noise.hpp"
#include "safhire/lanes/refresh.hpp"
