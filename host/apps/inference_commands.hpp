// The inference commands of the `safhire` program (inference_commands.cpp).
#pragma once

namespace safhire::apps {

// safhire demo [--json] [--images N] [--gamma G] ...
int run_demo(int argc, char** argv);
// safhire serve [--port P] [--model FILE]
int run_serve(int argc, char** argv);
// safhire infer [--server HOST:PORT] [--images N] ...
int run_infer(int argc, char** argv);
// safhire bench [--model resnet20] [--bits B] ... [--json]: exit status 1 on a logits mismatch
int run_bench(int argc, char** argv);
// safhire plan [--model FILE] [--set NAME] [--gamma G]
int run_plan(int argc, char** argv);
// safhire accuracy [--model FILE] [--images N] [--first K] [--threads T] [--json]
int run_accuracy(int argc, char** argv);
// safhire attack [--server HOST:PORT] [--rounds all|R,...] [--repeats R] [--alone] [--flood F]
int run_attack(int argc, char** argv);
// safhire failures [--model FILE] [--gamma G] [--results N] [--json]: exit status 1 when any
// result decrypted wrongly
int run_failures(int argc, char** argv);

}  // namespace safhire::apps
