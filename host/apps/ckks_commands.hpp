// The CKKS commands of the `safhire` program (ckks_commands.cpp).
#pragma once

namespace safhire::apps {

// safhire ckks demo [--set NAME] [--threads T] [--backend cpu|cuda] [--json]
int run_ckks(int argc, char** argv);
// The CKKS part of `safhire info`: the named sets with their estimated security.
void print_ckks_sets();

}  // namespace safhire::apps
