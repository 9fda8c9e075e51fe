# The README's quick commands that no other test runs, as a reader would type them (with a short
# `accuracy` run: 20 images instead of the whole test set): `safhire info`, `safhire plan`,
# `safhire ckks demo` and `safhire accuracy`; each must exit 0 and print what the README says it
# prints. (`serve`/`infer`, `ckks bootstrap`, the `lanes` commands and the examples have their
# own tests.)
# Usage: cmake -DSAFHIRE=<path> -P readme_commands.cmake
function(expect pattern)
  execute_process(COMMAND ${SAFHIRE} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "safhire ${ARGN} (exit ${rc}) did not print '${pattern}':\n${out}\n${err}")
  endif()
endfunction()
expect("Rings \\(R = Z\\[X\\]/Phi_M" info)                         # the rings, primes, kernels
expect("round +inputs .*P\\[fail\\] +switches" plan)              # every round's chunks, failure
expect("CKKS .* on cpu: N = .*keygen relinearization" ckks demo)  # each step's time, precision
expect("plaintext quantized accuracy [0-9.]+% \\(([0-9]+) of 20 Fashion-MNIST" accuracy
       --images 20)
